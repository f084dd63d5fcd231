"""``evaluate`` of the config that produced a log served from stale snapshots (as the
service serves) reproduces the live progressive value with every weight 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner, restore_learner
from banditree.logs import LogWriter, log_row
from simulate.evaluate import EvaluateOptions, evaluate

ROUNDS = 600


def test_the_producing_config_finds_its_live_value_under_snapshot_staleness(
    tmp_path: Path,
) -> None:
    ds = load("pendigits")
    X, y = ds.X_train[:ROUNDS], ds.y_train[:ROUNDS].astype(int)
    config = {"kind": "dgt", "n_features": X.shape[1], "n_actions": 10, "height": 3, "seed": 3}
    learner = build_learner(config)
    served = restore_learner(*learner.state())
    rows, losses, published_at = [], [], 0
    pending: list[tuple[object, float]] = []
    for t, (x, label) in enumerate(zip(X, y, strict=True)):
        decision = served.act(x, event_id=f"e{t}")
        loss = float(decision.action != label)
        losses.append(loss)
        pending.append((decision, loss))
        if len(pending) == 7:  # feedback arrives in bursts, after later decisions
            for d, lo in pending:
                learner.learn(d, Feedback(loss=lo))  # type: ignore[arg-type]
                rows.append(log_row(d, Feedback(loss=lo), offset=len(rows) + 1, time_seconds=t))  # type: ignore[arg-type]
            pending = []
        if learner.version - published_at >= 5:  # a snapshot every 5 updates
            served = restore_learner(*learner.state())
            published_at = learner.version
    assert len({r["model_version"] for r in rows}) > 20  # many snapshots served the log
    with LogWriter(tmp_path / "log.ndjson") as writer:
        writer.write(rows)
    (tmp_path / "same.json").write_text(json.dumps(config))
    report = evaluate(
        EvaluateOptions(
            log=tmp_path / "log.ndjson", configs=[tmp_path / "same.json"], out=tmp_path / "ev",
            n_bootstrap=50, progress=False,
        )
    )  # fmt: skip
    entry = report["candidates"]["same"]
    live_value = 1.0 - float(np.mean(losses[: len(rows)]))
    assert entry["progressive_rounds"] > 0.999 * len(rows)  # every weight 1
    assert abs(entry["progressive_value"] - live_value) < 1e-4  # float32 probabilities
