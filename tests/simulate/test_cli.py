"""The command line: ``banditree simulate`` and ``python -m simulate`` share one contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from banditree_cli import app

CONTRACT = [
    "--label",
    "--model",
    "--height",
    "--feedback",
    "--loss",
    "--passes",
    "--rounds",
    "--seeds",
    "--baselines",
    "--server",
    "--out",
    "--explorer",
    "--explorer-parameter",
    "--explorer-exponent",
    "--linear-update",
    "--ridge-l2",
    "--ridge-mix-rate",
    "--context-clip",
]


def test_help_lists_the_contract_options() -> None:
    result = CliRunner().invoke(app, ["simulate", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in CONTRACT:
        assert option in result.output, option


def test_bad_choice_names_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["simulate", "wine", "--model", "cart", "--out", str(tmp_path)], terminal_width=200
    )
    assert result.exit_code != 0 and "--model" in result.output


def test_explorer_settings_reach_the_learner_config(tmp_path: Path) -> None:
    args = ["simulate", "wine", "--model", "dgt", "--rounds", "60", "--seeds", "1"]
    args += ["--baselines", "", "--eval-points", "2", "--no-progress", "--out", str(tmp_path)]
    bad = CliRunner().invoke(app, [*args, "--explorer", "thompson"], terminal_width=200)
    assert bad.exit_code != 0 and "--explorer" in bad.output
    both = CliRunner().invoke(
        app, [*args, "--explore", "0.1", "--explorer-parameter", "3"], terminal_width=200
    )
    assert both.exit_code != 0 and "--explore" in both.output
    chosen = ["--explorer", "softmax", "--explorer-parameter", "0.2", "--explorer-exponent", "0.5"]
    result = CliRunner().invoke(app, [*args, *chosen], terminal_width=200)
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "report.json").read_text())["learners"]["dgt"]["config"]
    assert (config["explorer"], config["explorer_parameter"], config["explorer_exponent"]) == (
        "softmax",
        0.2,
        0.5,
    )


def test_linear_term_settings_reach_the_learner_config(tmp_path: Path) -> None:
    args = ["simulate", "wine", "--model", "dgt", "--rounds", "60", "--seeds", "1"]
    args += ["--baselines", "", "--eval-points", "2", "--no-progress", "--out", str(tmp_path)]
    bad = CliRunner().invoke(app, [*args, "--linear-update", "newton"], terminal_width=200)
    assert bad.exit_code != 0 and "--linear-update" in bad.output
    chosen = ["--linear-update", "adagrad", "--ridge-l2", "3", "--context-clip", "0"]
    chosen += ["--ridge-mix-rate", "2"]
    result = CliRunner().invoke(app, [*args, *chosen], terminal_width=200)
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "report.json").read_text())["learners"]["dgt"]["config"]
    assert (config["linear_update"], config["ridge_l2"], config["context_clip"]) == (
        "adagrad",
        3.0,
        0.0,
    )
    assert config["ridge_mix_rate"] == 2.0


def test_python_dash_m_simulate_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulate",
            "breast_cancer",
            "--model",
            "dgt",
            "--height",
            "3",
            "--rounds",
            "200",
            "--seeds",
            "2",
            "--baselines",
            "random",
            "--out",
            str(out),
            "--no-progress",
            "--eval-points",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert set(report["learners"]) == {"dgt", "dgt_full_information", "random"}
    assert report["learners"]["dgt"]["config"]["height"] == 3
    assert "test_accuracy" in done.stdout


def test_without_model_the_service_default_for_the_task_runs(tmp_path: Path) -> None:
    """No ``--model``: boosted for classification, a 4-tree averaged dgt_forest for regression."""
    args = ["--rounds", "60", "--seeds", "1", "--baselines", "", "--eval-points", "2"]
    args += ["--no-progress"]
    for data, extra, kind in (
        ("wine", [], "boosted"),
        ("abalone", ["--feedback", "two_point"], "dgt_forest"),
    ):
        out = tmp_path / data
        result = CliRunner().invoke(
            app, ["simulate", data, *args, *extra, "--out", str(out)], terminal_width=200
        )
        assert result.exit_code == 0, result.output
        report = json.loads((out / "report.json").read_text())
        assert report["model"] == kind
        config = report["learners"][kind]["config"]
        assert config["kind"] == kind
        assert f"{kind}_full_information" in report["learners"]


def test_every_config_field_is_an_option(tmp_path: Path) -> None:
    from banditree.learners import LearnerConfig
    from simulate.cli import SIMULATOR_SETS

    command = typer.main.get_command(app).get_command(None, "simulate")  # type: ignore[attr-defined]
    options = {opt for param in command.params for opt in param.opts}
    for name in set(LearnerConfig.model_fields) - SIMULATOR_SETS:
        assert "--" + name.replace("_", "-") in options, name
    args = ["simulate", "wine", "--model", "dgt", "--rounds", "60", "--seeds", "1"]
    args += ["--baselines", "", "--eval-points", "2", "--no-progress", "--out", str(tmp_path)]
    bad = CliRunner().invoke(app, [*args, "--accumulate", "0"], terminal_width=200)
    assert bad.exit_code != 0 and "--accumulate" in bad.output and "greater than" in bad.output
    chosen = ["--reward-link", "sigmoid", "--l2", "0.01", "--no-standardize", "--hidden", "4"]
    result = CliRunner().invoke(app, [*args, *chosen], terminal_width=200)
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "report.json").read_text())["learners"]["dgt"]["config"]
    assert (config["reward_link"], config["l2"], config["standardize"], config["hidden"]) == (
        "sigmoid",
        0.01,
        False,
        [4],
    )


def test_the_boosted_kind_runs_with_its_full_information_twin(tmp_path: Path) -> None:
    args = ["simulate", "wine", "--model", "boosted", "--rounds", "150", "--seeds", "1"]
    args += ["--baselines", "", "--eval-points", "2", "--no-progress", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    learners = json.loads((tmp_path / "report.json").read_text())["learners"]
    assert learners["boosted"]["config"]["kind"] == "boosted"
    assert "boosted_full_information" in learners
