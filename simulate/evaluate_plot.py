"""``evaluate.png``: each candidate's estimates with 95% intervals, and progressive value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_ESTIMATES = (
    ("ips", "IPS"),
    ("snips", "SNIPS"),
    ("dr", "DR"),
    ("progressive_value", "progressive"),
)


def plot_evaluation(report: dict[str, Any], path: Path) -> None:
    """Left: off-policy and progressive values per candidate beside the logged policy's
    value; right: the progressive value as the log is replayed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logged = report["logged_policy"]
    candidates = report["candidates"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2), dpi=100)
    left.axvspan(*logged["value_ci95"], color="0.85", label="logged policy, 95% CI")
    left.axvline(logged["value"], color="0.4", lw=1)
    labels: list[str] = []
    y = 0
    for name, entry in candidates.items():
        for offset, (key, label) in enumerate(_ESTIMATES):
            value, ci = entry.get(key), entry.get(f"{key}_ci95")
            row = y + offset * 0.2
            if value is None or ci is None:
                left.text(
                    logged["value"], row, f"  {label}: not supported", fontsize=7, va="center"
                )
                continue
            left.errorbar(
                value,
                row,
                xerr=[[max(value - ci[0], 0.0)], [max(ci[1] - value, 0.0)]],
                fmt="o",
                capsize=3,
                color=f"C{offset}",
                label=label if y == 0 else None,
            )
        labels.append(name)
        y += 1
    left.set_yticks([i + 0.3 for i in range(len(labels))], labels)
    left.invert_yaxis()
    left.set_xlabel("policy value (mean reward)")
    left.set_title("candidates vs the logged policy (95% CI)")
    left.legend(fontsize=8, loc="best")
    left.grid(True, axis="x", alpha=0.3)
    rows, values = zip(*logged["progressive_curve"], strict=True)
    right.plot(rows, values, color="0.3", label="logged policy")
    for i, (name, entry) in enumerate(candidates.items()):
        curve = entry.get("progressive_curve")
        if curve:
            r, v = zip(*curve, strict=True)
            right.plot(r, v, color=f"C{i + 4}", label=name)
    right.set_xscale("log")
    right.set_xlabel("log rows replayed")
    right.set_ylabel("progressive value (mean reward)")
    right.set_title("learning on the log as it arrives")
    right.legend(fontsize=8)
    right.grid(True, alpha=0.3)
    fig.suptitle(f"{report['log']['name']}: {report['log']['n_rows']} rows")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
