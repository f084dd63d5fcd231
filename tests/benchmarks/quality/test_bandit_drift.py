"""The drift benchmark: its report's ratios and a tiny real run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.quality.bandit_drift import main
from benchmarks.quality.bandit_drift_report import write_report


def _record(learner: str, post: float, recovery: int | None, **extra: Any) -> dict[str, Any]:
    return {
        "stream": "s", "kind": "abrupt", "seed": 0, "at": 3000, "n_actions": 3,
        "learner": learner, "pre": 0.1, "post": post, "recovery": recovery, "worst": 0.5,
        "total": post, "curve_start": 0, "curve": [0.1, 0.5, 0.2], **extra,
    }  # fmt: skip


def test_report_ratios_against_the_best_vw_and_bag5(tmp_path: Path) -> None:
    records = [
        _record("default", 0.2, 600),
        _record("vw_bag5_raw", 0.4, 1500),
        _record("vw_bag5_z", 0.25, 1200),
        _record("vw_eps0.05_z", 0.3, None),
    ]
    text = write_report(records, tmp_path)
    # best VW by post-drift loss: bag5 z (0.25); bag5's recovery: its better form (1,200)
    assert "| s | abrupt | default | 0.100 | 0.200 | 0.800 | 600 | 0.50 |" in text
    assert "vw_bag5_z (best VW)" in text and "| never |" in text
    assert (tmp_path / "drift.png").stat().st_size > 0


def test_report_gives_the_median_round_the_mean_left_the_band(tmp_path: Path) -> None:
    """Three seeds leaving after 500, 700 and never: the median is 700 (never counting
    as the longest); records written before the figure existed read as never."""
    records = [
        _record("default", 0.2, 600, left=500),
        {**_record("default", 0.2, 900, left=700), "seed": 1},
        {**_record("default", 0.2, 0, left=None), "seed": 2},
        _record("vw_bag5_z", 0.25, 1200),
    ]
    text = write_report(records, tmp_path)
    assert "left the band (median) |" in text
    assert "| s | abrupt | default | 0.100 | 0.200 | 0.800 | 600 | 0.50 | 0.500 | - | 700 |" in text
    assert "| vw_bag5_z (best VW) |" in text and "| - | never |" in text


@pytest.mark.slow
def test_a_tiny_run_writes_results_and_a_report(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    main(
        ["--streams", "page_blocks", "--kinds", "abrupt", "--seeds", "1", "--drift-at", "2500",
         "--vw", "vw_eps0.05", "--out", str(tmp_path), "--no-progress"]
    )  # fmt: skip
    text = (tmp_path / "report.md").read_text()
    assert "page_blocks | abrupt | default" in text and "vw_eps0.05_z" in text
