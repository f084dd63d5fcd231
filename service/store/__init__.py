"""Stores for pending events, model records and checkpoints (embedded files or Redis)."""

from service.settings import Settings
from service.store.base import CheckpointInfo, EventLookup, Store
from service.store.embedded import EmbeddedStore
from service.store.redis_store import RedisStore


def open_store(settings: Settings) -> Store:
    """The Redis store when ``redis_url`` is set, else the embedded store under ``data_dir``."""
    if settings.redis_url is not None:
        return RedisStore.from_url(settings.redis_url, prefix=settings.redis_prefix)
    return EmbeddedStore(settings.data_dir)


__all__ = ["CheckpointInfo", "EmbeddedStore", "EventLookup", "RedisStore", "Store", "open_store"]
