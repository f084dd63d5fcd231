"""Offline estimates a user can trust: raw OBD files, support rules, few-event notes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from banditree.datasets import data_path
from banditree.evaluation.support import SupportRules, support
from banditree_cli import app
from simulate.logged import LoggedOptions, evaluate_log, load_log_csv, load_obd


def test_a_raw_obd_csv_is_read_as_documented(tmp_path: Path) -> None:
    raw = tmp_path / "bts_all.csv.gz"
    shutil.copy(data_path("obd_random_all/all.csv.gz"), raw)
    bundled, read = load_obd(), load_log_csv(raw)
    assert read.context.shape == bundled.context.shape == (10_000, 104)
    assert np.array_equal(read.context, bundled.context)
    assert np.array_equal(read.action, bundled.action)
    assert np.array_equal(read.propensity, bundled.propensity)
    # and evaluate reads it too
    config = tmp_path / "eps.json"
    config.write_text(json.dumps({"kind": "dgt", "height": 2, "explorer": "epsilon_greedy",
                                  "explorer_parameter": 0.3}))  # fmt: skip
    result = CliRunner().invoke(
        app,
        ["evaluate", str(raw), "--config", str(config), "--out", str(tmp_path / "ev"),
         "--n-bootstrap", "20", "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert report["log"]["n_rows"] == 10_000 and report["log"]["n_features"] == 104
    entry = report["candidates"]["eps"]
    # 38 clicks in 10,000 rows: a claim, when made, says how few events it rests on
    assert entry["events"] < 30 and entry["few_events"]
    assert entry["supported"] is False or "interval_note" in entry


def test_one_click_with_a_large_weight_is_refused() -> None:
    weights = np.concatenate([np.full(999, 1.0), [37.8]])  # the weights look spread out
    reward = np.zeros(1000)
    reward[-1], reward[:2] = 1.0, 1.0  # but one rewarded round carries the estimate
    effective, _, reasons = support(weights, SupportRules(), None)
    assert effective > 400 and not reasons
    _, share, reasons = support(weights, SupportRules(), reward)
    assert share > 0.9 and any("weighted reward" in r for r in reasons)


def _uniform_log(path: Path, rows: int, actions: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(rows, 4)), columns=[f"x{j}" for j in range(4)])
    frame["action"] = rng.integers(0, actions, rows)
    frame["propensity"] = 1.0 / actions
    frame["reward"] = (rng.random(rows) < 0.05).astype(float)
    frame.to_csv(path, index=False)
    return path


def test_logged_mode_refuses_at_a_tiny_match_rate(tmp_path: Path) -> None:
    log = _uniform_log(tmp_path / "log.csv", rows=1000, actions=80)
    report = evaluate_log(
        LoggedOptions(data=str(log), model="dgt", out=tmp_path / "out", config={"height": 2},
                      n_bootstrap=50, progress=False)
    )  # fmt: skip
    learned = report["policies"]["dgt"]
    assert learned["match_rate"] < 0.05
    assert learned["supported"] is False and learned["refusals"]
    for name in ("ips", "snips", "dr"):
        assert learned[name] is None and learned[f"{name}_ci95"] is None
    assert (tmp_path / "out" / "ope.png").stat().st_size > 0


@pytest.mark.parametrize("actions", [2])
def test_logged_mode_still_estimates_with_support(tmp_path: Path, actions: int) -> None:
    log = _uniform_log(tmp_path / "log.csv", rows=1000, actions=actions)
    report = evaluate_log(
        LoggedOptions(data=str(log), model="dgt", out=tmp_path / "out", config={"height": 2},
                      n_bootstrap=50, progress=False)
    )  # fmt: skip
    learned = report["policies"]["dgt"]
    assert learned["supported"] is True and learned["ips"] is not None
