"""Models loaded on first use, let go past a bound: nothing acknowledged is lost.

A real server (SQLite store): after a restart no model is loaded until it is used,
while the learners apply every feedback logged before a kill -9 by themselves; with
``BANDITREE_MAX_RESIDENT_MODELS`` the served models loaded stay under the bound while
every model keeps taking and learning feedback.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.service.live_server import LiveServer

MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}
NAMES = [f"m{i}" for i in range(8)]
BOUND = 3


def loaded(http: httpx.Client) -> int:
    """``banditree_models_loaded``: the served models this process holds in memory."""
    text = http.get("/metrics").text
    found = re.search(r"^banditree_models_loaded (\S+)$", text, re.MULTILINE)
    assert found is not None
    return int(float(found.group(1)))


def rounds(http: httpx.Client, name: str, count: int) -> None:
    """``count`` decisions of ``name``, each answered by an acknowledged feedback."""
    for i in range(count):
        context = [float(i % 3), 1.0, -0.5, float(i)]
        decision = http.post(f"/v1/models/{name}/predict", json={"context": context}).json()
        answer = http.post(
            f"/v1/models/{name}/feedback",
            json={"event_id": decision["event_id"], "loss": float(decision["action"] != i % 3)},
        )
        assert answer.status_code == 200, answer.text


def listed_feedback(http: httpx.Client) -> dict[str, int]:
    models = http.get("/v1/models", params={"view": "summary"}).json()["models"]
    return {m["name"]: m["counters"]["feedback"] for m in models}


def wait_listed(http: httpx.Client, expected: dict[str, int], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while (seen := listed_feedback(http)) != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    assert seen == expected


def test_models_load_on_first_use_and_learn_every_logged_feedback(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        # no snapshot but the initial ones: the feedback is only in the log at the kill
        "BANDITREE_CHECKPOINT_EVERY_SECONDS": "3600",
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "100000",
        "BANDITREE_MAX_RESIDENT_MODELS": str(BOUND),
    }
    first = live_servers(env)
    with first.client() as http:
        for name in NAMES:
            assert http.put(f"/v1/models/{name}", json=MODEL).status_code == 201
        for name in NAMES:
            rounds(http, name, 5)
            assert loaded(http) <= BOUND
    first.stop(signal.SIGKILL)

    second = live_servers(env)
    with second.client() as http:
        assert loaded(http) == 0  # known, not loaded
        assert http.get("/readyz").json()["models"] == len(NAMES)
        # every model's learner applies its logged feedback without a request for it
        wait_listed(http, dict.fromkeys(NAMES, 5))
        assert loaded(http) == 0  # the list loads nothing either
        for name in NAMES:  # used in turn: loaded, then let go past the bound
            rounds(http, name, 5)
            assert loaded(http) <= BOUND
        for name in NAMES:  # a checkpoint loads each again: every feedback is in it
            saved = http.post(f"/v1/models/{name}/checkpoints")
            assert saved.status_code == 201, saved.text
            assert http.get(f"/v1/models/{name}").json()["counters"]["feedback"] == 10
            assert loaded(http) <= BOUND
        wait_listed(http, dict.fromkeys(NAMES, 10))
    second.stop(signal.SIGTERM)
    assert "Traceback" not in second.log_text()
