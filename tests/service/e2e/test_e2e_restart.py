"""Restart after SIGTERM and after SIGKILL: nothing acknowledged is lost; rollback; corruption."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from banditree.datasets import load
from tests.service.live_server import LiveServer

MODEL = "/v1/models/digits"


def train(http: httpx.Client, X: np.ndarray, y: np.ndarray) -> None:
    decisions = http.post(f"{MODEL}/predict", json={"contexts": X.tolist()}).json()["decisions"]
    for d, label in zip(decisions, y, strict=True):
        loss = float(d["action"] != int(label))
        http.post(
            f"{MODEL}/feedback", json={"event_id": d["event_id"], "loss": loss}
        ).raise_for_status()


def wait_served(http: httpx.Client, feedback_total: int) -> None:
    """Poll until the served snapshot holds ``feedback_total`` feedbacks (no checkpoint asked)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        model = http.get(MODEL).json()
        if model["counters"]["feedback"] == feedback_total and model["pending_updates"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"feedback not served: {model}")


def greedy(http: httpx.Client, X: np.ndarray) -> tuple[int, list[int]]:
    answer = http.post(f"{MODEL}/predict", json={"contexts": X.tolist()}).json()["decisions"]
    versions = {d["model_version"] for d in answer}
    assert len(versions) == 1
    return versions.pop(), [d["greedy_action"] for d in answer]


def test_restart_restores_version_and_decisions(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        "BANDITREE_CHECKPOINT_KEEP": "3",
        # snapshots only on request: a SIGKILL must lose nothing that was acknowledged
        "BANDITREE_CHECKPOINT_EVERY_SECONDS": "3600",
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "100000",
    }
    ds = load("pendigits")
    fixed = ds.X_test[:64]
    first = live_servers(env)
    with first.client() as http:
        http.put(
            MODEL, json={"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes,
                         "learning_rate": 1e-2, "accumulate": 1},
        ).raise_for_status()  # fmt: skip
        train(http, ds.X_train[:200], ds.y_train[:200])
        early = http.post(f"{MODEL}/checkpoints").json()
        early_version, early_greedy = greedy(http, fixed)
        assert early["version"] == early_version == 200
        train(http, ds.X_train[200:400], ds.y_train[200:400])
        # decisions made before the stop are answered after it (they are stored)
        open_decision = http.post(f"{MODEL}/predict", json={"context": fixed[0].tolist()}).json()
    # Graceful stop: the learner publishes what it learned (then uvicorn re-raises SIGTERM).
    assert first.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Traceback" not in first.log_text()

    second = live_servers(env)
    with second.client() as http:
        wait_served(http, 400)
        before = greedy(http, fixed)
        assert before[0] == 400 and before[1] != early_greedy
        shutdown_checkpoint = http.get(f"{MODEL}/checkpoints").json()["checkpoints"][0]
        assert shutdown_checkpoint["version"] == 400
        assert shutdown_checkpoint["sequence"] > early["sequence"]
        late = http.post(
            f"{MODEL}/feedback", json={"event_id": open_decision["event_id"], "loss": 1.0}
        )
        assert late.status_code == 200, late.text
        train(http, ds.X_train[400:499], ds.y_train[400:499])
        assert http.get(MODEL).json()["version"] == 400  # no snapshot published since
    # SIGKILL: no checkpoint since version 400; the 100 acknowledged feedbacks are replayed
    second.stop(signal.SIGKILL)

    third = live_servers(env)
    with third.client() as http:
        saved = http.post(f"{MODEL}/checkpoints").json()
        assert saved["version"] == 500
        model = http.get(MODEL).json()
        assert model["counters"]["feedback"] == 500 and model["pending_updates"] == 0
        listed = http.get(f"{MODEL}/checkpoints").json()["checkpoints"]
        assert [c["version"] for c in listed][:1] == [500] and len(listed) == 3  # kept K = 3
        rolled = http.post(f"{MODEL}/rollback", json={"version": 400})
        assert rolled.status_code == 200, rolled.text
        assert greedy(http, fixed) == before
        missing = http.post(f"{MODEL}/rollback", json={"version": 12345})
        assert missing.status_code == 404 and "12345" in missing.json()["detail"]
        # the learner goes on from the rolled-back checkpoint
        train(http, ds.X_train[500:510], ds.y_train[500:510])
        assert http.post(f"{MODEL}/checkpoints").json()["version"] == 410
    third.stop(signal.SIGKILL)

    # A damaged newest checkpoint is skipped (logged, counted), never half-loaded.
    with sqlite3.connect(tmp_path / "data" / "banditree.sqlite3") as db:
        sequence, blob = db.execute(
            "SELECT sequence, blob FROM checkpoints ORDER BY sequence DESC LIMIT 1"
        ).fetchone()
        damaged = bytearray(blob)
        damaged[-10] ^= 0xFF
        db.execute("UPDATE checkpoints SET blob = ? WHERE sequence = ?", (bytes(damaged), sequence))
    db.close()
    fourth = live_servers(env)
    with fourth.client() as http:
        # the checkpoint before it, then the log after that checkpoint's offset: 410 again
        deadline = time.monotonic() + 30
        while greedy(http, fixed)[0] != 410 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert greedy(http, fixed)[0] == 410
        metrics = http.get("/metrics").text
    assert 'banditree_checkpoint_corrupt_total{model="digits"} 1.0' in metrics
    fourth.stop(signal.SIGTERM)
    assert "skipping corrupt checkpoint" in fourth.log_text()
