"""Table and plot of ``benchmarks/quality/bandit_drift.py`` (figures: :func:`simulate.drift.drift_figures`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from simulate.drift import WINDOW, moving_average
from simulate.drift import drift_figures as figures

#: the moving-average curve kept per run: every CURVE_STEP rounds
CURVE_STEP = 100


def drift_figures(losses: np.ndarray, at: int, kind: str) -> dict[str, Any]:
    """:func:`simulate.drift.drift_figures` and the run's moving-average ``curve``."""
    out = figures(losses, at, kind)
    lo = max(0, at - 3000)
    out["curve_start"] = lo
    avg = moving_average(losses)
    out["curve"] = [round(float(v), 4) for v in avg[lo::CURVE_STEP]]
    return out


def _median(values: list[Any]) -> float | None:
    """Median, a never-recovered run (``None``) counting as the longest."""
    if not values:
        return None
    vals = [float("inf") if v is None else float(v) for v in values]
    m = statistics.median(vals)
    return None if m == float("inf") else m


def summarise(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """``(stream, kind) -> learner -> means over seeds`` (median recovery)."""
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in records:
        groups[(r["stream"], r["kind"])][r["learner"]].append(r)
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for key, learners in groups.items():
        out[key] = {}
        for learner, runs in learners.items():
            out[key][learner] = {
                "pre": float(np.mean([r["pre"] for r in runs])),
                "post": float(np.mean([r["post"] for r in runs])),
                "worst": float(np.mean([r["worst"] for r in runs])),
                "recovery": _median([r["recovery"] for r in runs]),
                "left": _median([r.get("left") for r in runs]),
                "return_recovery": _median([r.get("return_recovery") for r in runs])
                if "return_recovery" in runs[0]
                else None,
                "seeds": len(runs),
            }
    return out


def _recovery_ratio(ours: float | None, bag5: float | None) -> str:
    if ours is None:
        return "never"
    if bag5 is None:
        return "bag5 never"
    return "-" if bag5 == 0 else f"{ours / bag5:.2f}"


def _within(ours: float | None, bag5: float | None) -> bool:
    """Recovered no later than bag5 (which may never have)."""
    return ours is not None and (bag5 is None or ours <= bag5)


def _fmt(v: float | None, spec: str = ".3f") -> str:
    return "never" if v is None else format(v, spec)


def write_report(records: list[dict[str, Any]], out: Path, focus: str = "default") -> str:
    """``report.md`` (returned) and ``drift.png`` in ``out``."""
    table = summarise(records)
    lines = [
        "| stream | kind | learner | pre | post | post / best VW | recovery (median) "
        "| recovery / bag5 | worst 500 | return recovery | left the band (median) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios: list[float] = []
    goals: list[tuple[str, str, bool, bool]] = []
    for (stream, kind), learners in sorted(table.items()):
        vw = {k: v for k, v in learners.items() if k.startswith("vw_")}
        best_vw = min(vw, key=lambda k: vw[k]["post"]) if vw else None
        # VW bag5's recovery: that of its form (raw or z-scored) with the lower post loss
        bags = [v for k, v in vw.items() if k.startswith("vw_bag5")]
        bag5 = min(bags, key=lambda v: v["post"])["recovery"] if bags else None
        order = sorted(learners, key=lambda k: (k.startswith("vw_"), k != focus, k))
        for name in order:
            s = learners[name]
            ratio = s["post"] / vw[best_vw]["post"] if best_vw and vw[best_vw]["post"] else None
            rec_ratio = _recovery_ratio(s["recovery"], bag5)
            if name == focus and ratio is not None:
                ratios.append(ratio)
                goals.append((stream, kind, ratio <= 1.0, _within(s["recovery"], bag5)))
            mark = " (best VW)" if name == best_vw else ""
            back = _fmt(s["return_recovery"], ".0f") if kind == "recurring" else "-"
            lines.append(
                f"| {stream} | {kind} | {name}{mark} | {s['pre']:.3f} | {s['post']:.3f} "
                f"| {_fmt(ratio)} | {_fmt(s['recovery'], '.0f')} | {rec_ratio} "
                f"| {s['worst']:.3f} | {back} | {_fmt(s['left'], '.0f')} |"
            )
    if ratios:
        geo = float(np.exp(np.mean(np.log(ratios))))
        lines.append(
            f"\n{focus}: geometric mean of post-drift loss / best VW {geo:.3f} over "
            f"{len(ratios)} streams; worst {max(ratios):.3f}"
        )
    for kinds in (("abrupt", "gradual"), ("recurring",)):
        met = [g for g in goals if g[1] in kinds and not g[0].startswith("river_")]
        if met:
            lines.append(
                f"{focus}, bundled sets, {' and '.join(kinds)}: post-drift loss <= the best "
                f"VW's on {sum(g[2] for g in met)} of {len(met)} streams, recovery <= VW "
                f"bag5's on {sum(g[3] for g in met)} of {len(met)}"
            )
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    _plot(records, out / "drift.png", focus)
    return text


def _plot(records: list[dict[str, Any]], path: Path, focus: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["stream"], r["kind"]) for r in records})
    if not keys:
        return
    cols = 3
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3 * rows), squeeze=False)
    for ax, (stream, kind) in zip(axes.flat, keys, strict=False):
        runs = [r for r in records if r["stream"] == stream and r["kind"] == kind]
        seed0 = min(r["seed"] for r in runs)
        runs = [r for r in runs if r["seed"] == seed0]
        vw = sorted((r for r in runs if r["learner"].startswith("vw_")), key=lambda r: r["post"])
        shown = {focus, "no_detector", *(r["learner"] for r in vw[:1])}
        shown |= set([r["learner"] for r in vw if r["learner"].startswith("vw_bag5")][:1])
        for r in runs:
            if r["learner"] not in shown:
                continue
            t = r["curve_start"] + WINDOW - 1 + CURVE_STEP * np.arange(len(r["curve"]))
            style = {"lw": 2.0, "color": "k"} if r["learner"] == focus else {"lw": 0.8}
            ax.plot(t, r["curve"], label=r["learner"], **style)
        ax.axvline(runs[0]["at"], color="grey", ls=":")
        ax.set_title(f"{stream}, {kind} (seed {seed0})", fontsize=9)
        ax.set_xlabel("round")
        ax.set_ylabel(f"{WINDOW}-round mean loss")
        ax.legend(fontsize=5)
    for ax in axes.flat[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=55)
    plt.close(fig)
