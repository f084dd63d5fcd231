"""Drifting streams: the label maps, the figures around a change, ``simulate --drift``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from banditree_cli import app
from simulate.drift import drift_figures, drift_labels, map_at, resolve_drift_at


def test_maps_shift_by_one_abruptly_gradually_and_come_back() -> None:
    labels = np.zeros(4000, dtype=np.int64)
    abrupt = drift_labels(labels, 3, "abrupt", 1000, seed=0)
    assert (abrupt[:1000] == 0).all() and (abrupt[1000:] == 1).all()
    gradual = drift_labels(labels, 3, "gradual", 1000, seed=0)
    assert (gradual[:1000] == 0).all() and (gradual[1500:] == 1).all()
    assert 0.35 < gradual[1000:1500].mean() < 0.65  # the new map's share rises linearly
    assert gradual[1000:1100].mean() < gradual[1400:1500].mean()
    recurring = drift_labels(np.full(4000, 2), 3, "recurring", 1000, seed=0)
    assert (recurring[1000:2000] == 0).all() and (recurring[2000:] == 2).all()
    assert map_at("recurring", 1500, 1000) == 1 and map_at("recurring", 2500, 1000) == 0


def test_figures_around_a_change() -> None:
    """0.1 before the change at 3,000, 0.9 for 700 rounds, then 0.12."""
    losses = np.concatenate([np.full(3000, 0.1), np.full(700, 0.9), np.full(2300, 0.12)])
    f = drift_figures(losses, 3000, "abrupt")
    assert f["pre"] == pytest.approx(0.1)
    assert f["post"] == pytest.approx((700 * 0.9 + 2300 * 0.12) / 3000)
    assert f["worst"] == pytest.approx(0.9)
    # the first 500-round window within 0.05 of 0.1 holds 19 rounds at 0.9 (mean
    # 0.12 + 0.78 * 19 / 500 = 0.1496): rounds 3,681 .. 4,180, the 1,181st after the change
    assert f["recovery"] == 1181
    assert f["left"] == 500  # the first window after the change is out of the band
    flat = drift_figures(np.full(4000, 0.5), 3000, "abrupt")
    assert flat["recovery"] == 0 and flat["left"] is None  # never left
    # a loss that rises 1,000 rounds after the change: the first window back in the band
    # starts at round 4,269 (31 rounds at 0.9 in it), so it ends 1,769 rounds after
    late = np.concatenate([np.full(4000, 0.1), np.full(300, 0.9), np.full(2000, 0.1)])
    assert drift_figures(late, 3000, "abrupt")["recovery"] == 1769
    # and it left once a window held 32 rounds at 0.9 (mean 0.1512): rounds 3,532 .. 4,031
    assert drift_figures(late, 3000, "abrupt")["left"] == 1032
    never = drift_figures(np.concatenate([np.zeros(3000), np.ones(1000)]), 3000, "abrupt")
    assert never["recovery"] is None
    with pytest.raises(ValueError, match="rounds"):
        resolve_drift_at("abrupt", 3900, 4000)


def test_simulate_drift_reports_each_learners_figures(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["simulate", "page_blocks", "--model", "dgt", "--rounds", "3000", "--seeds", "1",
         "--baselines",
         "random", "--drift", "abrupt", "--drift-at", "1500", "--eval-points", "3",
         "--out", str(out), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    figures = report["drift"]["dgt"]
    assert figures["kind"] == "abrupt" and figures["at"] == 1500
    # the model learned before the change and recovered after it; random never cared
    assert figures["pre"] < 0.2 and figures["recovery"] is not None
    assert report["drift"]["random"]["pre"] > 0.6
    assert "abrupt change at 1500" in result.output


def test_simulate_drift_refuses_regression_and_a_late_change(tmp_path: Path) -> None:
    runner = CliRunner()
    late = runner.invoke(
        app,
        ["simulate", "page_blocks", "--rounds", "1000", "--seeds", "1", "--baselines", "",
         "--drift", "abrupt", "--drift-at", "900", "--out", str(tmp_path / "a"),
         "--no-progress"],
    )  # fmt: skip
    assert late.exit_code == 2 and "--drift-at" in late.output
    bad = runner.invoke(
        app,
        ["simulate", "page_blocks", "--drift", "sideways", "--out", str(tmp_path / "b")],
    )
    assert bad.exit_code != 0 and "--drift" in bad.output
