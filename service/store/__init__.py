"""Stores for model records, pending decisions, the feedback log, leases and checkpoints.

One narrow protocol per concern (:mod:`service.store.protocols`), one package per
backend (:mod:`service.store.sqlite`, :mod:`service.store.redis`) with a module per
concern; :func:`open_store` gives the composed :class:`Store` of the configured backend.
"""

from service.settings import Settings
from service.store.base import (
    CheckpointInfo,
    EventLookup,
    FencedOut,
    HeldCounters,
    IdleLearner,
    IdleVerdict,
    Lease,
    LogBounds,
    LogChunk,
    LogEntry,
    ModelGone,
    NameTaken,
    OfferedSnapshot,
    StoreBehind,
    StoreFull,
    StoreUnavailable,
    TooManyModels,
)
from service.store.protocols import (
    CheckpointStore,
    DecisionStore,
    LeaseStore,
    LogStore,
    NotificationStore,
    RecordStore,
    Store,
    StoreLifecycle,
)
from service.store.redis import RedisStore
from service.store.sqlite import SqliteStore


def open_store(settings: Settings) -> Store:
    """The Redis store when ``redis_url`` is set, else the SQLite store under ``data_dir``."""
    if settings.redis_url is not None:
        return RedisStore.from_url(
            settings.redis_url,
            prefix=settings.redis_prefix,
            timeout_seconds=settings.redis_timeout_seconds,
            wait_replicas=settings.redis_wait_replicas,
            wait_timeout_ms=settings.redis_wait_timeout_ms,
            checkpoint_keep_bytes=settings.checkpoint_keep_bytes,
            wire="redis_wire" not in settings.library_paths,
        )
    return SqliteStore(
        settings.data_dir,
        synchronous=settings.sqlite_synchronous,
        checkpoint_keep_bytes=settings.checkpoint_keep_bytes,
        min_free_bytes=settings.min_free_bytes,
    )


__all__ = [
    "CheckpointInfo",
    "CheckpointStore",
    "DecisionStore",
    "EventLookup",
    "FencedOut",
    "HeldCounters",
    "IdleLearner",
    "IdleVerdict",
    "Lease",
    "LeaseStore",
    "LogBounds",
    "LogChunk",
    "LogEntry",
    "LogStore",
    "ModelGone",
    "NameTaken",
    "NotificationStore",
    "OfferedSnapshot",
    "RecordStore",
    "RedisStore",
    "SqliteStore",
    "Store",
    "StoreBehind",
    "StoreFull",
    "StoreLifecycle",
    "StoreUnavailable",
    "TooManyModels",
    "open_store",
]
