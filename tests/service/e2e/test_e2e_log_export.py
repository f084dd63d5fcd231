"""The interaction log through a live server: export it, then evaluate the live config on it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from banditree.client import BanditreeError, Client
from banditree.datasets import load
from banditree.logs import LogWriter
from banditree_cli import app as cli
from tests.service.live_server import LiveServer

ROUNDS = 800


def test_exported_log_holds_every_feedback_and_evaluates_to_the_live_loss(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    # a snapshot every update (the least staleness: the offline replay has none), all kept
    # so retention keeps the log
    env = {
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "1",
        "BANDITREE_CHECKPOINT_KEEP": "10000",
    }
    server = live_servers(env)
    ds = load("pendigits")
    X, y = ds.X_train[:ROUNDS], ds.y_train[:ROUNDS].astype(int)
    config = {"kind": "dgt", "n_features": X.shape[1], "n_actions": 10, "height": 4}
    losses, played = [], []
    with Client(server.url) as client:
        client.create_model("digits", config)
        for x, label in zip(X, y, strict=True):
            decision = client.predict("digits", x.tolist())
            loss = float(decision.action != label)
            client.feedback("digits", decision.event_id, loss=loss)
            losses.append(loss)
            played.append((decision.event_id, decision.action, decision.probability))
        rows = list(client.export_log("digits", page_rows=300))  # three pages and a bit
        assert [r["event_id"] for r in rows] == [p[0] for p in played]
        assert [r["action"] for r in rows] == [p[1] for p in played]
        assert np.allclose([r["propensity"] for r in rows], [p[2] for p in played])
        assert [r["loss"] for r in rows] == losses
        offsets = [r["offset"] for r in rows]
        assert offsets == sorted(offsets) and len(set(offsets)) == ROUNDS
        middle = list(client.export_log("digits", since=offsets[99], until=offsets[199]))
        assert [r["offset"] for r in middle] == offsets[100:200]
        assert list(client.export_log("digits", since=offsets[5], until=offsets[2])) == []
        stored = client.get_model("digits").config
        try:
            list(client.export_log("unknown"))
        except BanditreeError as err:
            assert err.status == 404
        else:
            raise AssertionError("an unknown model's log was exported")

    with LogWriter(tmp_path / "log.ndjson") as writer:
        writer.write(rows)
    (tmp_path / "same.json").write_text(json.dumps(stored))
    result = CliRunner().invoke(
        cli,
        [
            "evaluate", str(tmp_path / "log.ndjson"), "--config", str(tmp_path / "same.json"),
            "--out", str(tmp_path / "ev"), "--n-bootstrap", "200", "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / "ev" / "report.json").read_text())["candidates"]["same"]
    low, high = entry["progressive_value_ci95"]
    assert low <= 1.0 - float(np.mean(losses)) <= high
