"""Cluster client faults are store faults (issue 41, item 1): every one a
``StoreUnavailable`` (503), and a broken subscription is made again.

``RedisClusterException`` ("Redis Cluster cannot be connected" while a master is down,
``SlotNotCoveredError``) is not a ``RedisError``: it escaped the store as a 500.  A
subscription whose node was lost raises ``RuntimeError("pubsub connection not set")``
at every later call: the snapshot watcher failed forever.
"""

from __future__ import annotations

from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, SlotNotCoveredError

from service.store import RedisStore, StoreUnavailable
from service.store.redis.client import unavailable
from service.store.redis.cluster import _Connection

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "error",
    [RedisClusterException("Redis Cluster cannot be connected"), SlotNotCoveredError("slot 7")],
)
async def test_a_cluster_client_fault_is_store_unavailable(error: Exception) -> None:
    @unavailable
    async def call() -> None:
        raise error

    with pytest.raises(StoreUnavailable, match=str(error)):
        await call()


class _BrokenPubSub:
    closed = False

    async def get_message(self, timeout: float) -> Any:
        raise RuntimeError("pubsub connection not set: did you forget to call subscribe()?")

    async def aclose(self) -> None:
        self.closed = True


async def test_a_broken_subscription_is_dropped_and_made_again(redis_prefix: str) -> None:
    store = RedisStore.from_url("redis://127.0.0.1:6379/0", prefix=redis_prefix)
    try:
        broken = _BrokenPubSub()
        store._pubsub = broken  # type: ignore[assignment]
        with pytest.raises(StoreUnavailable, match="pubsub connection not set"):
            await store.snapshot_notices(0.01)
        assert broken.closed and store._pubsub is None
        assert await store.snapshot_notices(0.01) == set()  # subscribed afresh
        assert store._pubsub is not None
    finally:
        await store.close()


class _ClosedWriter:
    """A stream writer whose transport the peer closed (uvloop's error on a write)."""

    def writelines(self, data: Any) -> None:
        raise RuntimeError("unable to perform operation on <TCPTransport>; the handler is closed")

    def close(self) -> None:
        pass

    async def wait_closed(self) -> None:
        pass


async def test_a_write_on_a_socket_the_peer_closed_is_a_connection_error() -> None:
    connection = _Connection(host="127.0.0.1", port=1, socket_timeout=0.5)
    connection._reader, connection._writer = object(), _ClosedWriter()  # type: ignore[assignment]
    with pytest.raises(RedisConnectionError, match="handler is closed"):
        await connection.send_packed_command([b"PING\r\n"], check_health=False)
    assert not connection.is_connected  # made again at the next call


async def test_a_write_on_a_connection_another_task_closed_is_a_connection_error() -> None:
    """A master killed under traffic: another task disconnects the connection between
    redis-py's check that it is connected and its write (one 500 in the chaos suite)."""
    connection = _Connection(host="127.0.0.1", port=1, socket_timeout=0.5)
    connection._reader, connection._writer = object(), _ClosedWriter()  # type: ignore[assignment]

    async def closed_meanwhile() -> None:
        connection._writer = None  # what its disconnect() leaves

    connection.check_health = closed_meanwhile  # type: ignore[method-assign]
    with pytest.raises(RedisConnectionError, match="disconnected"):
        await connection.send_packed_command([b"PING\r\n"])
    assert not connection.is_connected  # made again at the next call
