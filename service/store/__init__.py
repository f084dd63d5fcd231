"""Stores for pending events, model records and checkpoints (embedded files or Redis)."""

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from service.settings import Settings
from service.store.base import CheckpointInfo, EventLookup, Store
from service.store.embedded import EmbeddedStore
from service.store.redis_store import RedisStore


def open_store(settings: Settings) -> Store:
    """The Redis store when ``redis_url`` is set, else the embedded store under ``data_dir``."""
    if settings.redis_url is not None:
        timeout = settings.redis_timeout_seconds  # a hung Redis answers 503 after it, no retry
        client = Redis.from_url(
            settings.redis_url, decode_responses=False, socket_timeout=timeout,
            socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0),
        )  # fmt: skip
        return RedisStore(client, prefix=settings.redis_prefix)
    return EmbeddedStore(settings.data_dir)


__all__ = ["CheckpointInfo", "EmbeddedStore", "EventLookup", "RedisStore", "Store", "open_store"]
