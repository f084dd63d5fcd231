"""A Redis that comes back from an older snapshot under a serving process.

Redis saves a snapshot, the service learns more, Redis is killed and restarts from that
snapshot: the epoch key survives, but the model's log and counters are those of the
snapshot, behind what the process applied.  The process notices on the next feedback
(503, retried), writes its models back with the counters it knows and the snapshot it
serves, and learns the feedback acknowledged after the restore on top of that snapshot:
nothing it served is lost, and nothing acknowledged after the restore.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.service.live_server import LiveServer, free_port
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = needs_redis_server
MODEL = {"n_features": 2, "n_actions": 3, "accumulate": 1}


@pytest.fixture
def snapshot_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    (tmp_path / "rdb").mkdir()
    server = OwnRedis(free_port(), tmp_path / "redis.log", snapshot_dir=tmp_path / "rdb")
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.signal(signal.SIGKILL)


def start_server(port: int, log_path: Path) -> LiveServer:
    env = {"BANDITREE_REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    return LiveServer({**env, "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.5"}, log_path=log_path)


def learn(http: httpx.Client, rounds: int) -> int:
    """``rounds`` acknowledged feedbacks (a 503 retried; a decision lost with the store
    data, 404, is made again)."""
    accepted, deadline = 0, time.monotonic() + 30
    while accepted < rounds:
        assert time.monotonic() < deadline
        decision = http.post("/v1/models/m/predict", json={"context": [0.3, 0.6]})
        assert decision.status_code == 200, decision.text
        body = {"event_id": decision.json()["event_id"], "loss": (accepted % 3) / 2}
        while (fed := http.post("/v1/models/m/feedback", json=body)).status_code == 503:
            assert time.monotonic() < deadline, fed.text
            time.sleep(0.1)
        assert fed.status_code in (200, 404), fed.text
        accepted += fed.status_code == 200
    return accepted


def version_reaches(http: httpx.Client, version: int, seconds: float = 20.0) -> int:
    deadline = time.monotonic() + seconds
    while (now := http.get("/v1/models/m").json()["version"]) < version:
        if time.monotonic() > deadline:
            return int(now)
        time.sleep(0.1)
    return int(now)


def log_last(port: int) -> int:
    client = redis.Redis(port=port)
    try:
        return int(client.hget("banditree:ctr:{m}", "log_last") or 0)
    finally:
        client.close()


def test_a_redis_restored_from_an_older_snapshot_gets_what_the_process_holds(
    snapshot_redis: OwnRedis, tmp_path: Path
) -> None:
    server = start_server(snapshot_redis.port, tmp_path / "server-1.log")
    try:
        with server.client() as http:
            assert http.put("/v1/models/m", json=MODEL).status_code == 201
            assert learn(http, 10) == 10
            assert version_reaches(http, 10) == 10
            redis.Redis(port=snapshot_redis.port).save()  # the snapshot: 10 entries
            assert learn(http, 10) == 10
            assert http.post("/v1/models/m/checkpoints").status_code == 201
            assert version_reaches(http, 20) == 20

            snapshot_redis.signal(signal.SIGKILL)
            snapshot_redis.start()  # back from the snapshot: the log and counters at 10
            assert log_last(snapshot_redis.port) == 10

            assert learn(http, 5) == 5  # acknowledged after the restore
            assert version_reaches(http, 25) == 25, server.log_text()[-3000:]
            assert http.post("/v1/models/m/checkpoints").status_code == 201
            assert log_last(snapshot_redis.port) >= 25  # offsets went on past what was seen
        assert "Traceback" not in server.log_text(), server.log_text()[-4000:]
        server.stop(signal.SIGKILL)

        server = start_server(snapshot_redis.port, tmp_path / "server-2.log")
        with server.client() as http:
            assert http.get("/v1/models/m").json()["version"] == 25
    finally:
        server.stop(signal.SIGKILL)


def test_a_model_created_after_the_snapshot_is_written_back_not_dropped(
    snapshot_redis: OwnRedis, tmp_path: Path
) -> None:
    server = start_server(snapshot_redis.port, tmp_path / "server-1.log")
    try:
        with server.client() as http:
            assert http.put("/v1/models/old", json=MODEL).status_code == 201
            redis.Redis(port=snapshot_redis.port).save()  # the snapshot: without model m
            assert http.put("/v1/models/m", json=MODEL).status_code == 201
            assert learn(http, 4) == 4
            assert http.post("/v1/models/m/checkpoints").status_code == 201
            assert version_reaches(http, 4) == 4

            snapshot_redis.signal(signal.SIGKILL)
            snapshot_redis.start()
            client = redis.Redis(port=snapshot_redis.port)
            # the snapshot held "old" alone; the service may already be writing "m" back
            assert b"old" in client.hkeys("banditree:models")
            deadline = time.monotonic() + 20  # discovery sees fewer record changes: written back
            while set(client.hkeys("banditree:models")) != {b"old", b"m"}:
                assert time.monotonic() < deadline, server.log_text()[-3000:]
                time.sleep(0.1)
            client.close()
            assert {x["name"] for x in http.get("/v1/models").json()["models"]} == {"old", "m"}
            assert learn(http, 3) == 3
            assert version_reaches(http, 7) == 7, server.log_text()[-3000:]
            assert http.post("/v1/models/m/checkpoints").status_code == 201
        assert "Traceback" not in server.log_text(), server.log_text()[-4000:]
        server.stop(signal.SIGKILL)

        server = start_server(snapshot_redis.port, tmp_path / "server-2.log")
        with server.client() as http:
            assert http.get("/v1/models/m").json()["version"] == 7
    finally:
        server.stop(signal.SIGKILL)
