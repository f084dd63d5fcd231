"""Two server processes on one Redis: feedback for each other's decisions, one learner."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.service.conftest import REDIS_URL
from tests.service.live_server import LiveServer

pytestmark = pytest.mark.redis

CTX = [0.5, -1.0, 2.0]


def test_servers_share_pending_decisions(
    live_servers: Callable[[dict[str, str]], LiveServer], redis_prefix: str
) -> None:
    env = {"BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix}
    a, b = live_servers(env), live_servers(env)
    with a.client() as http_a, b.client() as http_b:
        config = {"n_features": 3, "n_actions": 4, "accumulate": 1}
        assert http_a.put("/v1/models/shared", json=config).status_code == 201
        assert http_b.put("/v1/models/shared", json=config).status_code == 409  # record is shared

        from_a = http_a.post("/v1/models/shared/predict", json={"context": CTX}).json()
        from_b = http_b.post("/v1/models/shared/predict", json={"context": CTX}).json()
        answered_by_b = http_b.post(
            "/v1/models/shared/feedback", json={"event_id": from_a["event_id"], "loss": 1.0}
        )
        answered_by_a = http_a.post(
            "/v1/models/shared/feedback", json={"event_id": from_b["event_id"], "reward": 1.0}
        )
        assert answered_by_b.status_code == 200 and answered_by_a.status_code == 200
        # Exactly once across both servers.
        again = http_a.post(
            "/v1/models/shared/feedback", json={"event_id": from_a["event_id"], "loss": 1.0}
        )
        assert again.status_code == 409

        # One learner (under a lease) learns every logged feedback; both serve its snapshot.
        saved = http_a.post("/v1/models/shared/checkpoints").json()
        assert saved["version"] == 2
        http_b.post("/v1/models/shared/checkpoints").raise_for_status()
        model_a = http_a.get("/v1/models/shared").json()
        model_b = http_b.get("/v1/models/shared").json()
    for model in (model_a, model_b):
        assert model["counters"]["feedback"] == 2 and model["version"] == 2
        assert model["counters"]["progressive_mean_loss"] == 0.5
