"""A start on a Redis that would lose acknowledged feedback in a crash says so (issue
41, item 8): without persistence, and with ``appendfsync everysec``, whose crash lost
one of 2,000 acknowledged log rows in round 3 (a write is postponed while the previous
fsync runs, and its reply goes out meanwhile).  ``appendfsync always`` gets no warning.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import redis as redis_py

from tests.service.live_server import LiveServer, free_port
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = needs_redis_server


def _start_log(live_servers: Callable[[dict[str, str]], LiveServer], port: int) -> str:
    server = live_servers({"BANDITREE_REDIS_URL": f"redis://127.0.0.1:{port}/0"})
    server.stop(signal.SIGTERM)
    return server.log_text()


def test_a_redis_without_persistence_is_warned_of(
    own_redis: OwnRedis, live_servers: Callable[[dict[str, str]], LiveServer]
) -> None:
    text = _start_log(live_servers, own_redis.port)
    assert f"redis 127.0.0.1:{own_redis.port} keeps no persistence" in text, text


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_an_append_only_redis_is_warned_of_only_short_of_always(
    fsync: str, tmp_path: Path, live_servers: Callable[[dict[str, str]], LiveServer]
) -> None:
    redis = OwnRedis(free_port(), tmp_path / "redis.log", aof_dir=tmp_path)
    redis.start()
    try:
        if fsync != "always":
            client = redis_py.Redis(port=redis.port)
            client.config_set("appendfsync", fsync)
            client.close()
        text = _start_log(live_servers, redis.port)
    finally:
        redis.signal(signal.SIGKILL)
    warned = f"redis 127.0.0.1:{redis.port} has appendfsync {fsync}" in text
    assert warned == (fsync != "always"), text
