"""Shared checks of a simulator report (the fields documented in the README)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check_interval(entry: dict[str, Any], figure: str) -> None:
    value, (low, high) = entry[figure], entry[f"{figure}_ci95"]
    assert math.isfinite(value), figure
    assert low <= value + 1e-12 and value <= high + 1e-12, (figure, low, value, high)


def check_report(out: Path, *, task: str, learners: set[str], n_seeds: int) -> dict[str, Any]:
    """Assert the documented fields of report.json and that the files open."""
    report = json.loads((out / "report.json").read_text())
    assert report["task"] == task
    for key in ("dataset", "n_train", "n_test", "seeds", "reference", "notices", "feedback"):
        assert key in report, key
    assert report["seeds"] == list(range(n_seeds))
    assert set(report["learners"]) == learners
    held_out = "test_accuracy" if task == "classification" else "test_rmse"
    progressive = "progressive_accuracy" if task == "classification" else "progressive_rmse"
    for name, entry in report["learners"].items():
        for figure in (
            progressive,
            "progressive_mean_loss",
            "regret",
            "regret_vs_constant",
            held_out,
        ):
            check_interval(entry, figure)
        curve = entry["curve"]
        queries = [p["queries"] for p in curve]
        assert queries == sorted(queries) and queries[-1] == entry["queries_total"], name
        for point in curve:
            check_interval(point, held_out)
        assert curve[-1][held_out] == entry[held_out]
    assert report["learners"][report["reference"]]["regret"] == 0.0
    for png in ("learning_curve.png", "regret.png"):
        data = (out / png).read_bytes()
        assert data.startswith(PNG_MAGIC), png
        import matplotlib.image

        image = matplotlib.image.imread(out / png)
        assert image.ndim == 3 and image.shape[0] > 100 and np.ptp(image) > 0
    header = (out / "curves.csv").read_text().splitlines()[0]
    assert header == "learner,queries,metric,mean,ci95_low,ci95_high"
    return report
