"""Stores for model records, pending decisions, the feedback log, leases and checkpoints."""

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
    LogEntry,
    ModelGone,
    OfferedSnapshot,
    Store,
    StoreUnavailable,
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
        )
    return SqliteStore(settings.data_dir, synchronous=settings.sqlite_synchronous)


__all__ = [
    "CheckpointInfo",
    "EventLookup",
    "FencedOut",
    "HeldCounters",
    "IdleLearner",
    "IdleVerdict",
    "Lease",
    "LogBounds",
    "LogEntry",
    "ModelGone",
    "OfferedSnapshot",
    "RedisStore",
    "SqliteStore",
    "Store",
    "StoreUnavailable",
    "open_store",
]
