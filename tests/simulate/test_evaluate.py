"""``banditree evaluate``: counterfactual values of candidate configurations on a log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from banditree.logs import open_log_writer
from banditree_cli import app
from simulate import SimulationOptions, simulate
from simulate.evaluate import EvaluateOptions, evaluate
from tests.simulate.conftest import PNG_MAGIC


def _write(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(json.dumps(config))
    return path


def test_round_trip_through_the_simulator(tmp_path: Path) -> None:
    """The configuration that produced a log, evaluated on it, finds its own live loss."""
    sim = simulate(
        SimulationOptions(
            data="pendigits", model="dgt", out=tmp_path / "sim", seeds=1, rounds=1500,
            baselines=[], eval_points=2, log_decisions=True, progress=False,
        )
    )  # fmt: skip
    live = sim["learners"]["dgt"]
    same = _write(tmp_path / "same.json", live["config"])
    other = _write(
        tmp_path / "linear.json",
        {"kind": "linear", "explorer": "epsilon_greedy", "explorer_parameter": 0.1},
    )
    result = CliRunner().invoke(
        app,
        [
            "evaluate", str(tmp_path / "sim" / "decisions.csv"), "--config", str(same),
            "--config", str(other), "--out", str(tmp_path / "ev"), "--n-bootstrap", "200",
            "--no-progress",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    entry = report["candidates"]["same"]
    low, high = entry["progressive_value_ci95"]
    live_value = 1.0 - live["progressive_mean_loss"]
    assert low <= live_value <= high
    assert entry["progressive_method"] == "importance_weighted"
    for name in ("ips", "snips", "dr"):
        assert entry[f"{name}_ci95"][0] <= entry[name] <= entry[f"{name}_ci95"][1]
    assert report["log"]["n_rows"] == 1500 and report["log"]["n_train"] == 1050
    assert report["candidates"]["linear"]["matched_rounds"] > 0
    assert (tmp_path / "ev" / "evaluate.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.slow
def test_open_bandit_logging_policy_is_covered(tmp_path: Path) -> None:
    """Uniform logging evaluated as a candidate: every interval covers its on-policy value."""
    report = evaluate(
        EvaluateOptions(
            log=Path("obd"),
            configs=[
                _write(tmp_path / "uniform.json", {"kind": "random"}),
                _write(tmp_path / "dgt.json", {"kind": "dgt", "height": 3}),
            ],
            out=tmp_path / "ev", n_bootstrap=200, progress=False,
        )
    )  # fmt: skip
    logged = report["logged_policy"]["value"]
    uniform = report["candidates"]["uniform"]
    for name in ("ips", "snips", "dr"):
        low, high = uniform[f"{name}_ci95"]
        assert low <= logged <= high, name
    assert uniform["effective_rounds"] == pytest.approx(3000)
    dgt = report["candidates"]["dgt"]
    assert dgt["supported"] and dgt["effective_rounds"] < uniform["effective_rounds"] / 5


def _synthetic_log(path: Path, n: int, *, uniform: bool) -> None:
    """Two actions; action 1 pays when x0 > 0.  Logging: uniform, or nearly always action 0."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    p1 = np.full(n, 0.5) if uniform else np.full(n, 0.002)
    action = (rng.random(n) < p1).astype(int)
    propensity = np.where(action == 1, p1, 1 - p1)
    loss = np.where((action == 1) == (x[:, 0] > 0), 0.0, 1.0)
    rows = [
        {"offset": i, "event_id": str(i), "context": x[i].tolist(), "action": int(action[i]),
         "propensity": float(propensity[i]), "loss": float(loss[i])}
        for i in range(n)
    ]  # fmt: skip
    with open_log_writer(path) as writer:
        writer.write(rows)


def test_uniform_logging_replays_by_rejection_sampling(tmp_path: Path) -> None:
    _synthetic_log(tmp_path / "log.ndjson", 2000, uniform=True)
    config = _write(
        tmp_path / "linear.json",
        {"kind": "linear", "explorer": "epsilon_greedy", "explorer_parameter": 0.1},
    )
    report = evaluate(
        EvaluateOptions(tmp_path / "log.ndjson", [config], tmp_path / "ev", n_bootstrap=100, progress=False)
    )  # fmt: skip
    entry = report["candidates"]["linear"]
    assert entry["progressive_method"] == "rejection_sampling"
    # the candidate accepts about half the rows (it plays the logged action half the time)
    assert 700 < entry["progressive_rounds"] < 1300
    assert entry["progressive_value"] > report["logged_policy"]["progressive_value"]


def test_thin_support_withholds_the_claim(tmp_path: Path) -> None:
    """Logging that almost never plays action 1: a candidate playing it at least a quarter
    of the time gets no number, and the report says why."""
    _synthetic_log(tmp_path / "log.parquet", 1500, uniform=False)
    explorer = _write(
        tmp_path / "explorer.json",
        {"kind": "linear", "explorer": "epsilon_greedy", "explorer_parameter": 0.5},
    )
    greedy = _write(
        tmp_path / "greedy.json",
        {"kind": "linear", "explorer": "epsilon_greedy", "explorer_parameter": 0.0},
    )
    report = evaluate(
        EvaluateOptions(tmp_path / "log.parquet", [explorer, greedy], tmp_path / "ev", n_bootstrap=50, progress=False)
    )  # fmt: skip
    entry = report["candidates"]["explorer"]
    assert not entry["supported"]
    assert entry["ips"] is None and entry["snips_ci95"] is None and entry["dr"] is None
    assert any("too few matching rounds" in r for r in entry["refusals"])
    assert any("propensities near zero" in r for r in entry["refusals"])
    # the greedy candidate keeps to the logged action 0 and is honestly estimated
    assert report["candidates"]["greedy"]["supported"]
    assert report["candidates"]["greedy"]["ips"] is not None


def test_config_that_does_not_fit_the_log_is_refused(tmp_path: Path) -> None:
    _synthetic_log(tmp_path / "log.csv", 100, uniform=True)
    bad = _write(tmp_path / "bad.json", {"kind": "dgt", "n_features": 5})
    result = CliRunner().invoke(
        app, ["evaluate", str(tmp_path / "log.csv"), "--config", str(bad), "--out", str(tmp_path / "ev")]
    )  # fmt: skip
    assert result.exit_code == 2
    assert "n_features is 5, the log's contexts have 3 values" in result.output
