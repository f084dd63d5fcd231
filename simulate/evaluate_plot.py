"""``evaluate.png``: each candidate's estimates with 95% intervals, and progressive value.

Laid out for any number of candidates: the estimates panel grows with them, the legend
(IPS, SNIPS, DR, progressive and the logged policy's band, whether or not a candidate
has them) sits below the panels, and the refusals are footnotes under the figure, never
over a title.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

_ESTIMATES = (
    ("ips", "IPS"),
    ("snips", "SNIPS"),
    ("dr", "DR"),
    ("progressive_value", "progressive"),
)
#: vertical spacing of one candidate's four estimates
_STEP = 0.2
#: footnote lines kept (one per refused candidate, wrapped)
_MAX_NOTES = 8


def build_figure(report: dict[str, Any]) -> Any:
    """The figure (left: estimates per candidate beside the logged policy's value; right:
    the progressive value as the log is replayed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    logged = report["logged_policy"]
    candidates = report["candidates"]
    n = max(1, len(candidates))
    notes = _notes(candidates)
    plots_height = 3.4 + 0.55 * n
    notes_height = 0.2 + 0.14 * len(notes) if notes else 0.0
    fig = plt.figure(figsize=(11.0, plots_height + notes_height), dpi=100, layout="constrained")
    top: Any = fig
    if notes:
        parts: Any = fig.subfigures(2, 1, height_ratios=[plots_height, notes_height])
        top, bottom = parts
        bottom.text(0.01, 0.95, "\n".join(notes), fontsize=7, va="top", ha="left")
    left, right = top.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1.0]})
    left.axvspan(*logged["value_ci95"], color="0.85")
    left.axvline(logged["value"], color="0.4", lw=1)
    for y, entry in enumerate(candidates.values()):
        for offset, (key, _) in enumerate(_ESTIMATES):
            value, ci = entry.get(key), entry.get(f"{key}_ci95")
            row = y + offset * _STEP
            if value is None or ci is None:  # refused: a hollow mark on the logged value
                left.plot(logged["value"], row, marker="x", color=f"C{offset}", ms=6)
                continue
            left.errorbar(
                value, row, xerr=[[max(value - ci[0], 0.0)], [max(ci[1] - value, 0.0)]],
                fmt="o", capsize=3, color=f"C{offset}",
            )  # fmt: skip
    left.set_yticks([i + 1.5 * _STEP for i in range(len(candidates))], list(candidates))
    left.set_ylim(n - 1 + 4 * _STEP + 0.2, -0.4)  # top to bottom, room for one candidate
    left.set_xlabel("policy value (mean reward)")
    left.set_title("candidates vs the logged policy (95% CI)", fontsize=10)
    left.grid(True, axis="x", alpha=0.3)
    rows, values = zip(*logged["progressive_curve"], strict=True)
    right.plot(rows, values, color="0.3", label="logged policy")
    for i, (name, entry) in enumerate(candidates.items()):
        curve = entry.get("progressive_curve")
        if curve:
            r, v = zip(*curve, strict=True)
            right.plot(r, v, color=f"C{(i + 4) % 10}", label=name)
    right.set_xscale("log")
    right.set_xlabel("log rows replayed")
    right.set_ylabel("progressive value (mean reward)")
    right.set_title("learning on the log as it arrives", fontsize=10)
    right.legend(fontsize=8, loc="best")
    right.grid(True, alpha=0.3)
    handles: list[Any] = [
        Line2D([], [], marker="o", ls="", color=f"C{i}", label=label)
        for i, (_, label) in enumerate(_ESTIMATES)
    ]
    handles += [
        Line2D([], [], marker="x", ls="", color="0.3", label="refused (too little support)"),
        Patch(color="0.85", label="logged policy, 95% CI"),
    ]
    top.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
    top.suptitle(f"{report['log']['name']}: {report['log']['n_rows']} rows", fontsize=11)
    return fig


def _notes(candidates: dict[str, Any]) -> list[str]:
    """One wrapped footnote per candidate with refusals or a few-events note."""
    lines: list[str] = []
    for name, entry in candidates.items():
        reasons = list(entry.get("refusals") or []) + list(entry.get("progressive_refusals") or [])
        if entry.get("interval_note") and not entry.get("refusals"):
            reasons.append(entry["interval_note"])
        if reasons:
            text = f"{name}: " + "; ".join(dict.fromkeys(reasons))
            lines += textwrap.wrap(text, 150, max_lines=2, placeholder=" ...")
    if len(lines) > _MAX_NOTES:
        lines = [*lines[: _MAX_NOTES - 1], "... and more: see report.json"]
    return lines


def plot_evaluation(report: dict[str, Any], path: Path) -> None:
    """Write :func:`build_figure` to ``path`` as PNG."""
    import matplotlib.pyplot as plt

    fig = build_figure(report)
    fig.savefig(path, format="png")
    plt.close(fig)
