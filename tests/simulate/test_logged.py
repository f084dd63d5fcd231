"""Logged mode: train on the Open Bandit sample, estimate by IPS/SNIPS/DR beside the logging policy."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from banditree_cli import app
from tests.simulate.conftest import PNG_MAGIC


def test_open_bandit_sample_report(tmp_path: Path) -> None:
    out = tmp_path / "obd"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "obd",
            "--model",
            "linear",
            "--out",
            str(out),
            "--seeds",
            "1",
            "--n-bootstrap",
            "50",
            "--no-progress",
            "--train-fraction",
            "0.8",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["n_actions"] == 80 and report["n_train"] == 8000 and report["n_test"] == 2000
    logging = report["policies"]["logging"]
    assert logging["value_ci95"][0] <= logging["value"] <= logging["value_ci95"][1]
    learned = report["policies"]["linear"]
    # a greedy policy over 80 uniformly logged items matches about 1 round in 80: 25 of
    # the 2,000 evaluation rounds, a handful of clicks - no claim (as evaluate)
    assert 0.0 <= learned["match_rate"] < 0.05
    assert learned["supported"] is False and learned["refusals"]
    for name in ("ips", "snips", "dr"):
        assert learned[name] is None and learned[f"{name}_ci95"] is None
    assert "no estimate:" in result.output
    assert (out / "ope.png").read_bytes().startswith(PNG_MAGIC)


def test_a_simulator_decision_log_replays(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(
        app,
        [
            "simulate",
            "wine",
            "--model",
            "dgt",
            "--out",
            str(tmp_path / "run"),
            "--rounds",
            "400",
            "--seeds",
            "2",
            "--baselines",
            "",
            "--log-decisions",
            "--no-progress",
            "--eval-points",
            "3",
        ],
    )
    assert first.exit_code == 0, first.output
    second = runner.invoke(
        app,
        [
            "simulate",
            str(tmp_path / "run" / "decisions.csv"),
            "--logged",
            "--model",
            "linear",
            "--out",
            str(tmp_path / "ope"),
            "--seeds",
            "1",
            "--n-bootstrap",
            "50",
            "--no-progress",
        ],
    )
    assert second.exit_code == 0, second.output
    report = json.loads((tmp_path / "ope" / "report.json").read_text())
    assert report["n_train"] + report["n_test"] == 400  # the first seed's rounds only
    assert report["n_actions"] == 3
