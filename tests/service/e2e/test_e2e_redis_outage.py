"""Redis goes away and comes back: predictions go on unlogged, feedback gets 503, no loss."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.service.live_server import LiveServer, free_port
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    """This module's own Redis keeps an AOF, so a restart brings the acknowledged back."""
    server = OwnRedis(free_port(), tmp_path / "redis.log", aof_dir=tmp_path)
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.signal(signal.SIGKILL)


@needs_redis_server
def test_service_rides_out_a_redis_outage(
    live_servers: Callable[[dict[str, str]], LiveServer], own_redis: OwnRedis
) -> None:
    env = {
        "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{own_redis.port}/0",
        "BANDITREE_REDIS_TIMEOUT_SECONDS": "0.2",
    }
    server = live_servers(env)
    with server.client() as http:
        config = {"kind": "dgt", "n_features": 2, "n_actions": 2, "accumulate": 1}
        http.put("/v1/models/m", json=config).raise_for_status()
        before = http.post("/v1/models/m/predict", json={"contexts": [[0.0, 1.0]] * 6}).json()
        for d in before["decisions"][:3]:
            body = {"event_id": d["event_id"], "loss": 1.0}
            http.post("/v1/models/m/feedback", json=body).raise_for_status()

        own_redis.signal(signal.SIGKILL)
        answer = http.post("/v1/models/m/predict", json={"context": [0.0, 1.0]})
        assert answer.status_code == 200 and answer.json()["logged"] is False
        refused = http.post(
            "/v1/models/m/feedback",
            json={"event_id": before["decisions"][3]["event_id"], "loss": 0},
        )
        assert (
            refused.status_code == 503 and "may not have been recorded" in refused.json()["detail"]
        )
        ready = http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "degraded"
        metrics = http.get("/metrics").text
        assert 'banditree_unlogged_predictions_total{model="m"} 1.0' in metrics

        own_redis.start()  # the same AOF: everything acknowledged before is back
        deadline = time.monotonic() + 30
        while http.get("/readyz").json()["status"] != "ready":
            assert time.monotonic() < deadline, "never ready again"
            time.sleep(0.1)
        for d in before["decisions"][3:]:
            body = {"event_id": d["event_id"], "loss": 0.0}
            again = http.post("/v1/models/m/feedback", json=body)
            assert again.status_code == 200, again.text
        saved = http.post("/v1/models/m/checkpoints")
        assert saved.status_code == 201, saved.text
        model = http.get("/v1/models/m").json()
    assert model["counters"]["feedback"] == 6 and model["version"] == 6
    assert model["counters"]["progressive_mean_loss"] == 0.5
    assert "Traceback" not in server.log_text()
