"""Redis answering with an error reply instead of a result: LOADING, READONLY, OOM.

Each state is made for real on a ``redis-server`` of the test's own: a restart that
replays a large snapshot slowly (LOADING), a failover that demotes it to a replica
(READONLY), ``maxmemory`` reached under ``noeviction`` (OOM).  Every request then gets
200, a 4xx or a 503 with ``Retry-After`` (which the client retries), never a 500; and
``/readyz`` says ``degraded`` while the store answers so.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from service.store import StoreUnavailable
from service.store.redis.wire import refusal, store_error
from tests.service.live_server import LiveServer, free_port
from tests.service.own_redis import needs_redis_server

pytestmark = needs_redis_server
MODEL = {"n_features": 2, "n_actions": 2, "accumulate": 1}


class Server:
    """A ``redis-server`` on a spare port, its files in ``root``."""

    def __init__(self, root: Path, *extra: str) -> None:
        self.port, self.root = free_port(), root
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(root), "--repl-diskless-sync-delay", "0"]
        args += [*extra]
        self.log = open(root / f"redis-{self.port}.log", "ab")  # closed in stop()
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.client = redis.Redis(port=self.port)

    def wait_answering(self) -> None:
        for _ in range(200):
            try:
                self.client.ping()
                return
            except (redis.ConnectionError, redis.ResponseError):
                time.sleep(0.05)

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def _start(servers: list[Server], root: Path, *extra: str) -> Server:
    root.mkdir(exist_ok=True)
    server = Server(root, *extra)
    servers.append(server)
    server.wait_answering()
    return server


def _service(tmp_path: Path, store: Server) -> LiveServer:
    env = {
        "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{store.port}/0",
        "BANDITREE_REDIS_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
        "BANDITREE_LEASE_SECONDS": "1",
    }
    live = LiveServer(env, log_path=tmp_path / "service.log")
    with live.client() as http:
        http.put("/v1/models/m", json=MODEL).raise_for_status()
        for _ in range(3):
            decision = http.post("/v1/models/m/predict", json={"context": [0.5, 0.5]}).json()
            body = {"event_id": decision["event_id"], "loss": 0.25}
            http.post("/v1/models/m/feedback", json=body).raise_for_status()
    return live


def _every_request(http: httpx.Client) -> dict[str, int]:
    """One of each request that writes to the store; their statuses (each checked)."""
    answers: dict[str, httpx.Response] = {}
    answers["predict"] = decision = http.post("/v1/models/m/predict", json={"context": [0.1, 0.9]})
    event = decision.json().get("event_id", "0" * 36) if decision.status_code == 200 else "0" * 36
    answers["feedback"] = http.post("/v1/models/m/feedback", json={"event_id": event, "loss": 0.5})
    answers["put"] = http.put(f"/v1/models/n{uuid.uuid4().hex[:6]}", json=MODEL)
    answers["checkpoint"] = http.post("/v1/models/m/checkpoints")
    answers["delete"] = http.delete("/v1/models/gone")
    answers["log"] = http.get("/v1/models/m/log")
    for route, answer in answers.items():
        assert answer.status_code != 500 and answer.status_code < 600, (route, answer.text)
        if answer.status_code == 503:
            assert answer.headers.get("Retry-After"), (route, answer.headers)
    return {route: answer.status_code for route, answer in answers.items()}


def _degraded(http: httpx.Client) -> dict[str, str]:
    ready = http.get("/readyz")
    assert ready.status_code in (200, 503)
    body: dict[str, str] = ready.json()
    return body


def test_readonly_after_a_failover_is_503_never_500(tmp_path: Path, servers: list[Server]) -> None:
    old = _start(servers, tmp_path / "old")
    live = _service(tmp_path, old)
    try:
        new = _start(servers, tmp_path / "new")
        new.client.replicaof("127.0.0.1", old.port)  # the new master syncs, then takes over
        for _ in range(200):
            if new.client.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        new.client.replicaof("no", "one")
        old.client.replicaof("127.0.0.1", new.port)  # the old master is demoted: READONLY
        time.sleep(0.5)
        with pytest.raises(redis.ReadOnlyError):
            old.client.set("probe", "1")
        with live.client() as http:
            for _ in range(5):
                statuses = _every_request(http)
                assert statuses["feedback"] in (404, 503), statuses
                assert statuses["put"] == 503 and statuses["checkpoint"] == 503, statuses
            assert _degraded(http)["status"] == "degraded"
        assert "Traceback" not in live.log_text()
    finally:
        live.stop(signal.SIGKILL)


def test_out_of_memory_under_noeviction_is_503_never_500(
    tmp_path: Path, servers: list[Server]
) -> None:
    store = _start(servers, tmp_path / "oom")
    live = _service(tmp_path, store)
    try:
        used = int(store.client.info("memory")["used_memory"])
        store.client.config_set("maxmemory-policy", "noeviction")
        store.client.config_set("maxmemory", str(used + 1_000_000))
        filler, i = "x" * 10_000, 0
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            while True:
                store.client.set(f"filler:{i}", filler)
                i += 1
        used = int(store.client.info("memory")["used_memory"])  # well over it, whatever frees
        store.client.config_set("maxmemory", str(used - 200_000))
        with live.client() as http:
            for _ in range(5):
                statuses = _every_request(http)
                assert statuses["put"] == 503 and statuses["checkpoint"] == 503, statuses
            assert _degraded(http)["status"] == "degraded"
            store.client.flushdb()  # memory again: writes succeed (the models come back)
            store.client.config_set("maxmemory", "0")
            deadline = time.monotonic() + 15
            while _degraded(http)["status"] != "ready" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _degraded(http)["status"] == "ready"
        assert "Traceback" not in live.log_text()
    finally:
        live.stop(signal.SIGKILL)


def test_loading_after_a_restart_is_503_never_500(tmp_path: Path, servers: list[Server]) -> None:
    root = tmp_path / "loading"
    store = _start(servers, root)
    live = _service(tmp_path, store)
    try:
        pipe = store.client.pipeline(transaction=False)
        for i in range(100_000):  # a snapshot that takes seconds to replay, slowed below
            pipe.set(f"filler:{i}", i)
        pipe.execute()
        store.client.save()
        port = store.port
        store.client.shutdown(nosave=True)
        store.process.wait(timeout=10)
        servers.remove(store)
        store.log.close()
        again = Server.__new__(Server)
        again.port, again.root = port, root
        args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(root), "--key-load-delay", "100"]
        args += ["--loading-process-events-interval-bytes", "1024"]
        again.log = open(root / "redis-again.log", "ab")
        again.process = subprocess.Popen(args, stdout=again.log, stderr=subprocess.STDOUT)
        again.client = redis.Redis(port=port)
        servers.append(again)
        time.sleep(0.5)
        with pytest.raises(redis.BusyLoadingError):
            again.client.get("probe")
        with live.client() as http:
            for _ in range(3):
                statuses = _every_request(http)
                assert statuses["feedback"] == 503 and statuses["put"] == 503, statuses
            assert _degraded(http)["status"] == "degraded"
            assert again.client.info("persistence")["loading"] == 1  # all of it while loading
        assert "Traceback" not in live.log_text()
    finally:
        live.stop(signal.SIGKILL)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (redis.BusyLoadingError("Redis is loading the dataset in memory"), "LOADING"),
        (redis.ReadOnlyError("You can't write against a read only replica."), "READONLY"),
        (redis.exceptions.OutOfMemoryError("command not allowed when used memory"), "OOM"),
        (redis.ResponseError("MISCONF Redis is configured to save RDB snapshots"), "MISCONF"),
        (redis.ResponseError("WRONGTYPE Operation against a key"), "WRONGTYPE"),
        (redis.ResponseError("Error running script"), "ERR"),
        (redis.TimeoutError("Timeout reading from socket"), None),
    ],
)
def test_every_redis_failure_is_the_store_unavailable(error: Exception, code: str | None) -> None:
    assert refusal(error) == code
    mapped = store_error(error)
    assert isinstance(mapped, StoreUnavailable)
    assert code is None or f"({code})" in str(mapped)
