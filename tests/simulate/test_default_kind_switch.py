"""``banditree simulate`` with the classification default's kind, ``boosted``
(``defaults.CLASSIFICATION_KIND``; ``tests/learners/test_default_kind_switch.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from banditree.learners.config import defaults
from banditree_cli import app


@pytest.fixture(autouse=True)
def boosted_default() -> None:
    assert defaults.CLASSIFICATION_KIND == "boosted"


def test_a_run_without_a_model_runs_the_default_and_its_log_replays(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    args = ["simulate", "wine", "--rounds", "300", "--seeds", "1", "--baselines", ""]
    args += ["--eval-points", "2", "--no-progress", "--log-decisions", "--out", str(tmp_path)]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    learners = json.loads((tmp_path / "report.json").read_text())["learners"]
    assert learners["boosted"]["config"]["kind"] == "boosted"
    logged = ["simulate", str(tmp_path / "decisions.csv"), "--logged", "--seeds", "1"]
    logged += ["--n-bootstrap", "50", "--no-progress", "--out", str(tmp_path / "ope")]
    replayed = runner.invoke(app, logged, terminal_width=200)
    assert replayed.exit_code == 0, replayed.output
    report = json.loads((tmp_path / "ope" / "report.json").read_text())
    assert "boosted" in report["policies"] and report["n_train"] + report["n_test"] == 300


def test_a_warm_start_still_builds_the_tree(tmp_path: Path) -> None:
    runner = CliRunner()
    trained = runner.invoke(
        app,
        ["train", "wine", "--height", "3", "--epochs", "5", "--grid", "none",
         "--out", str(tmp_path / "model"), "--no-progress"],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    result = runner.invoke(
        app,
        ["simulate", "wine", "--rounds", "150", "--seeds", "1", "--baselines", "",
         "--warm-start", str(tmp_path / "model" / "model.safetensors"), "--eval-points", "2",
         "--out", str(tmp_path / "run"), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    learners = json.loads((tmp_path / "run" / "report.json").read_text())["learners"]
    assert {"dgt", "dgt_warm_start"} <= set(learners)
    assert all(entry["config"]["kind"] == "dgt" for entry in learners.values()), learners
