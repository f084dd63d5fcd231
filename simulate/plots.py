"""PNG plots of a report: held-out learning curves and regret, with 95% bands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulate.report import metric_names


def _band(entry_curve: list[dict[str, Any]], metric: str) -> tuple[list[float], ...]:
    queries = [float(p["queries"]) for p in entry_curve]
    mean = [float(p[metric]) for p in entry_curve]
    low = [
        float(p[f"{metric}_ci95"][0]) if p[f"{metric}_ci95"][0] is not None else m
        for p, m in zip(entry_curve, mean, strict=True)
    ]
    high = [
        float(p[f"{metric}_ci95"][1]) if p[f"{metric}_ci95"][1] is not None else m
        for p, m in zip(entry_curve, mean, strict=True)
    ]
    return queries, mean, low, high


def _plot(report: dict[str, Any], key: str, metric: str, ylabel: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    for name, entry in report["learners"].items():
        queries, mean, low, high = _band(entry[key], metric)
        (line,) = ax.plot(queries, mean, label=name, marker="o", markersize=3)
        ax.fill_between(queries, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xscale("log")
    ax.set_xlabel("queries to the loss")
    ax.set_ylabel(ylabel)
    n_seeds = len(report.get("seeds", []))
    ax.set_title(f"{report['dataset']} ({report['feedback']} feedback, {n_seeds} seeds, 95% CI)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path


def write_plots(report: dict[str, Any], out_dir: Path) -> list[Path]:
    """``learning_curve.png`` (held-out accuracy / RMSE) and ``regret.png``."""
    _, held_out = metric_names(report["task"])
    label = "held-out accuracy" if held_out == "test_accuracy" else "held-out RMSE"
    return [
        _plot(report, "curve", held_out, label, out_dir / "learning_curve.png"),
        _plot(
            report,
            "regret_curve",
            "regret",
            f"regret (mean loss - {report['reference']})",
            out_dir / "regret.png",
        ),
    ]
