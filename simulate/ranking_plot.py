"""The ranking simulation's figure: progressive loss, and cold-start versus seen reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def write_ranking_plot(
    report: dict[str, Any],
    curves: dict[str, list[np.ndarray]],
    windows: dict[str, list[list[dict[str, Any]]]],
    path: Path,
) -> Path:
    """``path`` (PNG): left, each learner's progressive loss by round (mean over seeds);
    right, its reward on held-back (cold, solid) and seen (dashed) classes in windows
    after the half."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    for name, per in curves.items():
        n = min(len(c) for c in per)
        mean = np.mean([c[:n] for c in per], axis=0)
        (line,) = left.plot(np.arange(1, n + 1), mean, label=name)
        rows = windows[name]
        m = min(len(r) for r in rows)
        x = [rows[0][i]["round"] for i in range(m)]
        for kind, style in (("cold", "-"), ("seen", "--")):
            y = _nanmean(np.array([[r[i][kind] for i in range(m)] for r in rows], dtype=float))
            right.plot(x, y, style, color=line.get_color(), marker="o", markersize=3,
                       label=f"{name} {kind}")  # fmt: skip
    seeds = len(report["seeds"])
    left.set_xlabel("round")
    left.set_ylabel("progressive loss (1 - reward)")
    left.set_title(f"{report['dataset']} ranking, {report['candidates']} candidates, {seeds} seeds")
    right.set_xlabel("rounds after the held-back classes appear")
    right.set_ylabel("reward (windowed)")
    right.set_title("cold start: never-seen (solid) vs seen (dashed) actions")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def _nanmean(values: np.ndarray) -> np.ndarray:
    """Column means over the finite entries (NaN where a column has none)."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=0)
    sums = np.where(finite, values, 0.0).sum(axis=0)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
