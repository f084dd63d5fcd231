"""Restart after SIGTERM and after SIGKILL: same version, same greedy decisions; rollback."""

from __future__ import annotations

import signal
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


def wait_applied(http: httpx.Client, feedback_total: int) -> None:
    """Poll until the writer has applied ``feedback_total`` feedbacks (no checkpoint asked)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        model = http.get(MODEL).json()
        if model["counters"]["feedback"] == feedback_total and model["pending_updates"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"feedback not applied: {model}")


def greedy(http: httpx.Client, X: np.ndarray) -> tuple[int, list[int]]:
    answer = http.post(f"{MODEL}/predict", json={"contexts": X.tolist()}).json()["decisions"]
    versions = {d["model_version"] for d in answer}
    assert len(versions) == 1
    return versions.pop(), [d["greedy_action"] for d in answer]


def test_restart_restores_version_and_decisions(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {"BANDITREE_DATA_DIR": str(tmp_path / "data"), "BANDITREE_CHECKPOINT_KEEP": "3"}
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
        wait_applied(http, 400)
        before = greedy(http, fixed)
    # Graceful stop: uvicorn ends the lifespan, which checkpoints (then re-raises SIGTERM).
    assert first.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert before[0] == 400 and before[1] != early_greedy
    assert "Traceback" not in first.log_text()

    second = live_servers(env)
    with second.client() as http:
        assert greedy(http, fixed) == before
        shutdown_checkpoint = http.get(f"{MODEL}/checkpoints").json()["checkpoints"][0]
        assert shutdown_checkpoint["version"] == 400 and shutdown_checkpoint["sequence"] == 2
        train(http, ds.X_train[400:500], ds.y_train[400:500])
        saved = http.post(f"{MODEL}/checkpoints").json()
        after_checkpoint = greedy(http, fixed)
        listed = http.get(f"{MODEL}/checkpoints").json()["checkpoints"]
    assert saved["version"] == after_checkpoint[0] == 500
    assert [c["version"] for c in listed][:1] == [500] and len(listed) == 3  # kept K = 3
    second.stop(signal.SIGKILL)

    third = live_servers(env)
    with third.client() as http:
        assert greedy(http, fixed) == after_checkpoint
        rolled = http.post(f"{MODEL}/rollback", json={"version": early_version})
        assert rolled.status_code == 200, rolled.text
        assert greedy(http, fixed) == (early_version, early_greedy)
        missing = http.post(f"{MODEL}/rollback", json={"version": 12345})
        assert missing.status_code == 404 and "12345" in missing.json()["detail"]
    third.stop(signal.SIGKILL)

    # A damaged newest checkpoint is skipped (logged, counted), never half-loaded.
    newest = sorted((tmp_path / "data" / "models" / "digits" / "checkpoints").iterdir())[-1]
    blob = bytearray(newest.read_bytes())
    blob[-10] ^= 0xFF
    newest.write_bytes(bytes(blob))
    fourth = live_servers(env)
    with fourth.client() as http:
        assert greedy(http, fixed) == after_checkpoint  # the previous checkpoint (version 500)
        metrics = http.get("/metrics").text
    assert 'banditree_checkpoint_corrupt_total{model="digits"} 1.0' in metrics
    fourth.stop(signal.SIGTERM)
    assert "skipping corrupt checkpoint" in fourth.log_text()
