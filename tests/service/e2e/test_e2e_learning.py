"""A client loop of predict/feedback over HTTP against a live server learns a real stream."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from banditree.client import Client, FeedbackResult
from banditree.datasets import load
from banditree.learners.gradient_bandit import EAGER_ROUNDS
from tests.service.conftest import REDIS_URL
from tests.service.live_server import LiveServer

pytestmark = pytest.mark.redis

ROUNDS = 2000
BATCH = 10  # contexts per predict request; feedback is one request per decision


def test_progressive_accuracy_over_http_rises_well_above_random(
    live_servers: Callable[[dict[str, str]], LiveServer], redis_prefix: str
) -> None:
    server = live_servers(
        {"BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix}
    )
    ds = load("pendigits")
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:ROUNDS]
    correct = np.zeros(ROUNDS)
    with Client(server.url) as client:
        client.create_model(
            "digits",
            {"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes,
             "learning_rate": 1e-2},
        )  # fmt: skip
        for start in range(0, ROUNDS, BATCH):
            rows = order[start : start + BATCH]
            decisions = client.predict_batch("digits", ds.X_train[rows].tolist())
            for t, i, decision in zip(range(start, start + BATCH), rows, decisions, strict=True):
                assert decision.probability is not None and decision.action is not None
                assert 0.0 < decision.probability <= 1.0 and decision.model_version >= 0
                loss = float(decision.action != int(ds.y_train[i]))
                answer = client.feedback("digits", decision.event_id, loss=loss)
                assert answer == FeedbackResult(decision.event_id, "accepted")
                correct[t] = 1.0 - loss
        client.checkpoint("digits")  # flushes the writer
        model = client.get_model("digits").raw
    with server.client() as http:
        metrics = http.get("/metrics").text
    accuracy = correct.mean()
    assert accuracy > 3.5 / ds.n_classes, accuracy  # uniform random plays 1/K
    assert correct[-ROUNDS // 3 :].mean() > correct[: ROUNDS // 3].mean() + 0.1
    counters = model["counters"]
    assert counters["predictions"] == ROUNDS and counters["feedback"] == ROUNDS
    updates = EAGER_ROUNDS + (ROUNDS - EAGER_ROUNDS) // 4  # one by one, then accumulate = 4
    assert model["version"] == counters["updates"] == updates
    assert counters["progressive_mean_loss"] == pytest.approx(1.0 - accuracy)
    assert f'banditree_predictions_total{{model="digits"}} {float(ROUNDS)}' in metrics
    assert (
        f'banditree_feedback_total{{model="digits",outcome="applied"}} {float(ROUNDS)}' in metrics
    )
    assert f'banditree_model_version{{model="digits"}} {float(updates)}' in metrics
