"""The Redis store's wire connection, closed while it is being opened (the store stops
during a connect): the connection made afterwards is closed, never kept open."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from service.store.redis.wire import WireConnection
from tests.service.conftest import REDIS_URL

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

HOST, PORT = "127.0.0.1", int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])


async def test_a_connection_opened_as_the_store_closes_is_not_kept() -> None:
    wire = WireConnection(HOST, PORT, timeout_seconds=5.0)
    opening = asyncio.ensure_future(wire.connect())
    await asyncio.sleep(0)  # the connect is under way
    wire.close()
    with pytest.raises(RedisConnectionError, match="closing"):
        await opening
    assert not wire.connected  # before: connected, its socket open until the loop closed


async def test_a_closed_connection_does_not_open_again() -> None:
    wire = WireConnection(HOST, PORT, timeout_seconds=5.0)
    await wire.connect()
    assert wire.connected
    wire.close()
    with pytest.raises(RedisConnectionError, match="closing"):
        await wire.connect()
    assert not wire.connected
