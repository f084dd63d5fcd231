"""DSJson export of a ranking model's log: Vowpal Wabbit reads it, and it reads back."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.learners import build_learner
from banditree.logs import LogWriter, log_row
from banditree.logs.dsjson import dsjson_event, read_dsjson

vw = pytest.importorskip("vowpalwabbit")


def _rows(n: int) -> list[dict[str, object]]:
    """Log rows of a ranking model: learned decisions, and deferred ones never activated."""
    model = build_learner({"task": "ranking"})
    rng = random.Random(0)
    rows = []
    for t in range(n):
        actions = [
            (
                f"item{rng.randrange(50)}-{j}",
                {
                    "genre": rng.choice(["rock", "jazz"]),
                    "tags": ["new"] * (j % 2),
                    "price": rng.random(),
                },
            )
            for j in range(rng.randrange(2, 6))
        ]
        context = {
            "user": {"age": rng.randrange(18, 80), "vip": rng.random() < 0.3},
            "_slot": {"size": "l"},
        }
        deferred = t % 10 == 9
        d = model.rank(context, actions, f"ev{t}", active=not deferred)  # type: ignore[attr-defined]
        feedback = Feedback(loss=float(rng.random() < 0.5))
        model.learn(d, feedback)
        rows.append(log_row(d, feedback, offset=t + 1, time_seconds=1.8e9 + t, source="feedback"))
    return rows


def test_vowpal_wabbit_reads_the_export(tmp_path: Path) -> None:
    rows = _rows(60)
    path = tmp_path / "log.dsjson"
    with LogWriter(path, "dsjson") as writer:
        writer.write(rows)
    first = dsjson_event(rows[0])
    chosen = rows[0]["action"]
    assert first["_labelIndex"] == chosen and first["a"][0] == chosen + 1  # type: ignore[operator]
    assert first["p"][0] == first["_label_probability"]
    assert abs(sum(first["p"]) - 1.0) < 1e-9
    assert "slot" in first["c"] and "_slot" not in first["c"]
    workspace = vw.Workspace(f"--cb_explore_adf --dsjson -d {path} --quiet --strict_parse -q ::")
    workspace.run_parser()
    # every line parsed; the 6 deferred, never activated ones are skipped (_skipLearn)
    assert workspace.get_weighted_examples() == 54
    workspace.finish()


def test_the_export_reads_back_into_the_same_rows(tmp_path: Path) -> None:
    rows = _rows(20)
    path = tmp_path / "log.dsjson"
    with LogWriter(path, "dsjson") as writer:
        writer.write(rows)
    back = list(read_dsjson(path))
    assert len(back) == 20
    for row, again in zip(rows, back, strict=True):
        ranking, read = row["ranking"], again["ranking"]
        assert read["ids"] == ranking["ids"] and read["probabilities"] == ranking["probabilities"]  # type: ignore[index]
        assert again["action"] == row["action"] and again["loss"] == row["loss"]
        assert read.get("active", True) == ranking.get("active", True)  # type: ignore[union-attr]


def test_rows_without_a_candidate_set_are_refused(tmp_path: Path) -> None:
    clf = build_learner({"n_features": 2, "n_actions": 3})
    d = clf.act([0.1, 0.2], event_id="c")
    row = log_row(d, Feedback(loss=0.0), offset=1, time_seconds=0.0)
    assert "ranking" not in row  # other models' rows are unchanged
    with (
        pytest.raises(ValueError, match="ranking models"),
        LogWriter(tmp_path / "x", "dsjson") as writer,
    ):
        writer.write([row])
