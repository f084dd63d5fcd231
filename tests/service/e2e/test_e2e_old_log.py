"""A log written by the previous version (JSON decisions) is learned after an upgrade.

One server writes its decisions binary and is killed before any checkpoint; a copy of
its data has every stored decision (log and pending) rewritten into the JSON form the
previous version wrote.  A server started on each copy replays the log: both learn the
same model (the same version and greedy actions on held-out contexts), and a pending
decision of the old form takes its feedback.
"""

from __future__ import annotations

import shutil
import signal
import sqlite3
import struct
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from banditree.core.codec import BINARY_PREFIX, decision_record, read_decision, record_json
from banditree.datasets import load
from tests.service.live_server import LiveServer

MODEL = "/v1/models/digits"


def uid_of(payload: str) -> str:
    """The model uid written in a binary stored decision (its header's lengths)."""
    raw = bytes.fromhex(payload[len(BINARY_PREFIX) :])
    uid_len, n = struct.unpack_from("<H", raw, 2)[0], struct.unpack_from("<I", raw, 8)[0]
    start = 64 + 8 * n
    return raw[start : start + uid_len].decode()


def as_json(payload: str) -> str:
    uid = uid_of(payload)
    decision = read_decision(payload, uid)
    assert decision is not None
    return record_json({"uid": uid, "decision": decision_record(decision)})


def rewrite_as_json(db_path: Path) -> int:
    """Every stored decision of ``db_path`` in the previous version's JSON form."""
    with sqlite3.connect(db_path) as db:
        logged = db.execute("SELECT model, offset, decision FROM log").fetchall()
        pending = db.execute(
            "SELECT model, event_id, payload FROM decisions WHERE payload IS NOT NULL"
        ).fetchall()
        for model, offset, payload in logged:
            assert payload.startswith(BINARY_PREFIX)
            db.execute(
                "UPDATE log SET decision = ? WHERE model = ? AND offset = ?",
                (as_json(payload), model, offset),
            )
        for model, event_id, payload in pending:
            assert payload.startswith(BINARY_PREFIX)
            db.execute(
                "UPDATE decisions SET payload = ? WHERE model = ? AND event_id = ?",
                (as_json(payload), model, event_id),
            )
    db.close()
    return len(logged)


def learned(http: httpx.Client, feedback_total: int) -> int:
    """The version published once ``feedback_total`` feedbacks are learned."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        model = http.get(MODEL).json()
        if model["counters"]["feedback"] + model["pending_updates"] == feedback_total:
            version = int(http.post(f"{MODEL}/checkpoints").json()["version"])
            assert http.get(MODEL).json()["counters"]["feedback"] == feedback_total
            return version
        time.sleep(0.05)
    raise AssertionError(f"not {feedback_total} feedbacks learned: {model}")


def greedy(http: httpx.Client, X: np.ndarray) -> list[int]:
    answer = http.post(f"{MODEL}/predict", json={"contexts": X.tolist()}).json()["decisions"]
    return [d["greedy_action"] for d in answer]


def test_a_json_log_of_the_previous_version_is_learned_as_its_binary_twin(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    quiet = {
        "BANDITREE_CHECKPOINT_EVERY_SECONDS": "3600",
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "100000",
    }
    binary_dir, json_dir = tmp_path / "binary", tmp_path / "json"
    ds = load("pendigits")
    first = live_servers({"BANDITREE_DATA_DIR": str(binary_dir), **quiet})
    with first.client() as http:
        http.put(
            MODEL, json={"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes,
                         "learning_rate": 1e-2, "accumulate": 2},
        ).raise_for_status()  # fmt: skip
        decisions = http.post(
            f"{MODEL}/predict", json={"contexts": ds.X_train[:250].tolist()}
        ).json()["decisions"]
        for d, label in zip(decisions[:240], ds.y_train[:240], strict=True):
            http.post(
                f"{MODEL}/feedback",
                json={"event_id": d["event_id"], "loss": float(d["action"] != int(label))},
            ).raise_for_status()
    first.stop(signal.SIGKILL)
    shutil.copytree(binary_dir, json_dir)
    assert rewrite_as_json(json_dir / "banditree.sqlite3") == 240

    answers = []
    for data in (binary_dir, json_dir):
        server = live_servers({"BANDITREE_DATA_DIR": str(data), **quiet})
        with server.client() as http:
            versions = [learned(http, 240)]  # the whole log replayed
            late = decisions[245]  # stored before the kill: its feedback is taken now
            http.post(
                f"{MODEL}/feedback", json={"event_id": late["event_id"], "loss": 1.0}
            ).raise_for_status()
            http.post(
                f"{MODEL}/feedback", json={"event_id": decisions[246]["event_id"], "loss": 0.0}
            ).raise_for_status()
            versions.append(learned(http, 242))
            answers.append((versions, greedy(http, ds.X_test[:200])))
        server.stop(signal.SIGTERM)
        assert "Traceback" not in server.log_text() and "skipped" not in server.log_text()
    assert answers[0] == answers[1]
    (before, after), actions = answers[0]
    assert 100 < before < after and len(set(actions)) > 1
