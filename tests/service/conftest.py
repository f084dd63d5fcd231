"""Fixtures for the service tests: a unique Redis key prefix per test, cleaned up after."""

from __future__ import annotations

import signal
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import redis

from service.store import RedisStore, SqliteStore, Store
from tests.service.live_server import LiveServer, free_port
from tests.service.own_redis import OwnRedis

REDIS_URL = "redis://127.0.0.1:6379/0"


def delete_prefix(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix no other test uses; every key under it is deleted afterwards."""
    prefix = f"banditree-test:{uuid.uuid4().hex}:"
    yield prefix
    delete_prefix(prefix)


@pytest.fixture(params=["sqlite", "redis"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[Store]:
    """Each store implementation, for the shared contract tests."""
    if request.param == "sqlite":
        opened: Store = SqliteStore(tmp_path)
    else:
        # a second per call, not the service's quarter: the contract is about answers, and
        # a busy test machine can take longer than 0.25 s to connect or reply
        opened = RedisStore.from_url(REDIS_URL, prefix=redis_prefix, timeout_seconds=1.0)
    await opened.ping()
    yield opened
    await opened.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def live_servers(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], LiveServer]]:
    """Start real uvicorn servers with the given ``BANDITREE_*`` env; all are killed afterwards."""
    started: list[LiveServer] = []

    def start(env: dict[str, str]) -> LiveServer:
        server = LiveServer(env, log_path=tmp_path / f"server-{len(started)}.log")
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """A Redis of the test's own without persistence (a test module may define its own)."""
    server = OwnRedis(free_port(), tmp_path / "redis.log")
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.process.send_signal(signal.SIGCONT)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
