"""A Redis without persistence restarts empty under a serving process (issue row 5).

The process goes on serving, writes its models back (records, counters, the snapshot it
serves as a checkpoint), learns the feedback acknowledged after the loss on top of that
snapshot with log offsets that go on where they were, and after a restart of the server
every model comes back with what it learned.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.service.chaos import ServiceProcess
from tests.service.live_server import LiveServer
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = [needs_redis_server, pytest.mark.slow]

ADMIN = "loss-admin"
MODELS = {"m1": 4, "m2": 3}  # name -> n_features


def start_server(redis_port: int, log_path: Path) -> LiveServer:
    return LiveServer(
        {
            "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "BANDITREE_API_KEYS": "",
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.5",
        },
        log_path=log_path,
    )


def client(server: LiveServer) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10.0
    )


def learn(http: httpx.Client, name: str, rounds: int) -> int:
    """Predict then give feedback ``rounds`` times (retrying a 503); the feedback accepted."""
    accepted = 0
    context = [0.1 * (i + 1) for i in range(MODELS[name])]
    for i in range(rounds):
        decision = http.post(f"/v1/models/{name}/predict", json={"context": context})
        assert decision.status_code == 200, decision.text
        body = {"event_id": decision.json()["event_id"], "loss": (i % 3) / 2}
        deadline = time.monotonic() + 10
        while (fed := http.post(f"/v1/models/{name}/feedback", json=body)).status_code == 503:
            assert time.monotonic() < deadline, fed.text
            time.sleep(0.1)
        assert fed.status_code == 200, fed.text
        accepted += 1
    return accepted


def checkpointed(http: httpx.Client, name: str) -> dict[str, Any]:
    saved = http.post(f"/v1/models/{name}/checkpoints")
    assert saved.status_code == 201, saved.text
    model: dict[str, Any] = http.get(f"/v1/models/{name}").json()
    return model


def stored_records(port: int) -> set[str]:
    client = redis.Redis(port=port)
    try:
        return {key.decode() for key in client.hkeys("banditree:models")}
    finally:
        client.close()


def log_offsets(port: int, name: str) -> list[int]:
    client = redis.Redis(port=port)
    try:
        entries = client.xrange(f"banditree:log:{{{name}}}")
        return [int(entry_id.decode().split("-")[0]) for entry_id, _ in entries]
    finally:
        client.close()


def test_models_survive_a_redis_that_lost_its_data(own_redis: OwnRedis, tmp_path: Path) -> None:
    server = start_server(own_redis.port, tmp_path / "server-1.log")
    try:
        with client(server) as http:
            for name, n_features in MODELS.items():
                config = {"n_features": n_features, "n_actions": 3, "accumulate": 1}
                assert http.put(f"/v1/models/{name}", json=config).status_code == 201
            before = {name: learn(http, name, 12) for name in MODELS}
            versions = {name: checkpointed(http, name)["version"] for name in MODELS}
            assert versions == before  # one update per feedback

            own_redis.signal(signal.SIGKILL)
            own_redis.start()  # empty: no persistence
            deadline = time.monotonic() + 20
            while stored_records(own_redis.port) != set(MODELS):  # written back, no restart
                assert time.monotonic() < deadline, server.log_text()[-3000:]
                time.sleep(0.1)
            listed = {m["name"]: m for m in http.get("/v1/models").json()["models"]}
            assert set(listed) == set(MODELS)
            assert {name: listed[name]["version"] for name in MODELS} == versions

            after = learn(http, "m1", 8)  # acknowledged after the loss: learned on top
            model = checkpointed(http, "m1")
            assert model["version"] == versions["m1"] + after, model
            assert model["counters"]["progressive_mean_loss"] is not None
            offsets = log_offsets(own_redis.port, "m1")
            assert offsets and min(offsets) > before["m1"], offsets  # offsets went on
        assert server.stop(signal.SIGKILL) != 0
        assert "Traceback" not in server.log_text(), server.log_text()[-4000:]

        server = start_server(own_redis.port, tmp_path / "server-2.log")
        with client(server) as http:
            listed = {m["name"]: m for m in http.get("/v1/models").json()["models"]}
            assert set(listed) == set(MODELS)
            assert listed["m1"]["version"] == versions["m1"] + after
            assert listed["m2"]["version"] == versions["m2"]
            assert learn(http, "m2", 3) == 3
            assert checkpointed(http, "m2")["version"] == versions["m2"] + 3
        assert "Traceback" not in server.log_text(), server.log_text()[-4000:]
    finally:
        server.stop(signal.SIGKILL)


def test_split_roles_restart_learning_from_the_served_snapshot(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    """An api process and a learner process: the learner has no snapshot to offer."""
    env = {
        "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{own_redis.port}/0",
        "BANDITREE_API_KEYS": "",
        "BANDITREE_ADMIN_KEYS": ADMIN,
        "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.5",
    }
    learner = ServiceProcess(
        {**env, "BANDITREE_ROLE": "learner"}, log_path=tmp_path / "learner.log", serves=False
    )
    api = ServiceProcess({**env, "BANDITREE_ROLE": "api"}, log_path=tmp_path / "api.log")
    try:
        learner.wait_ready()
        api.wait_ready()
        with httpx.Client(
            base_url=api.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30.0
        ) as http:
            config = {"n_features": MODELS["m1"], "n_actions": 3, "accumulate": 1}
            assert http.put("/v1/models/m1", json=config).status_code == 201
            before = learn(http, "m1", 10)
            assert checkpointed(http, "m1")["version"] == before

            own_redis.signal(signal.SIGKILL)
            own_redis.start()
            deadline = time.monotonic() + 20
            while stored_records(own_redis.port) != {"m1"}:
                assert time.monotonic() < deadline, api.log_path.read_text()[-3000:]
                time.sleep(0.1)
            after = learn(http, "m1", 6)
            model = checkpointed(http, "m1")  # the learner process learned it on top
            assert model["version"] == before + after, model
        for process in (api, learner):
            assert "Traceback" not in process.log_path.read_text()
    finally:
        for process in (api, learner):
            process.kill()
