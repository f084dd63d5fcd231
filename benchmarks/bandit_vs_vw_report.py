"""Tables and the ratio plot of :mod:`benchmarks.bandit_vs_vw` from its result records."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.protocol import HALVES, half_of

Records = list[dict[str, Any]]


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def summarize(records: Records) -> dict[str, Any]:
    """Means over seeds per (dataset, learner); VW's better feature form per algorithm."""
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        runs[(r["dataset"], r["learner"], r.get("form", ""))].append(r)
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    ours = list(dict.fromkeys(r["learner"] for r in records if r.get("family") == "banditree"))
    vw = list(dict.fromkeys(r["learner"] for r in records if r.get("family") == "vw"))
    table: dict[str, dict[str, dict[str, Any]]] = {d: {} for d in datasets}
    for (dataset, learner, form), rs in runs.items():
        entry = {
            "loss": _mean([r["progressive_loss"] for r in rs]),
            "accuracy": _mean([r["test_accuracy"] for r in rs]),
            "rounds": _mean([r["rounds"] for r in rs]),
            "seeds": len(rs),
            "form": form,
            "prefix": {
                c: _mean([r["prefix_loss"][c] for r in rs if c in r["prefix_loss"]])
                for c in rs[0]["prefix_loss"]
            },
            "examples": sum(r["rounds"] for r in rs),
            "seconds": sum(r["rounds"] / r["examples_per_second"] for r in rs)
            if rs[0]["examples_per_second"]
            else None,
        }
        key = learner
        best = table[dataset].get(key)
        if best is None or entry["loss"] < best["loss"]:  # VW: the better of raw and z
            table[dataset][key] = entry
    return {"datasets": datasets, "ours": ours, "vw": vw, "table": table}


def geometric_mean(values: list[float]) -> float:
    """The geometric mean (nan for none)."""
    return math.exp(float(np.mean(np.log(values)))) if values else float("nan")


def halves_of(records: Records) -> dict[str, str]:
    """Each dataset's half of the protocol (:func:`benchmarks.protocol.half_of`)."""
    return {r["dataset"]: half_of(r["dataset"], bool(r.get("categorical"))) for r in records}


def half_lines(ratios: dict[str, float], halves: dict[str, str], what: str) -> list[str]:
    """One line per half present: the geometric mean of ``ratios`` over its sets, the worst."""
    lines = []
    for half in HALVES:
        values = [v for d, v in ratios.items() if halves.get(d) == half]
        if values:
            lines.append(
                f"- {half} half ({len(values)} sets): geometric mean of {what} "
                f"**{geometric_mean(values):.3f}**, worst {max(values):.3f}"
            )
    return lines


def _cell(entry: dict[str, Any] | None, field: str, digits: int = 3) -> str:
    if entry is None:
        return "-"
    text = f"{entry[field]:.{digits}f}"
    return f"{text} ({entry['form']})" if entry.get("form") else text


def write_report(records: Records, out: Path) -> str:
    """Write ``report.md`` and ``ratio.png`` to ``out``; return the markdown."""
    s = summarize(records)
    datasets, ours, vw, table = s["datasets"], s["ours"], s["vw"], s["table"]
    ratios: dict[str, float] = {}
    best_vw: dict[str, str] = {}
    for d in datasets:
        present = [a for a in vw if a in table[d]]
        if present and "default" in table[d]:
            best_vw[d] = min(present, key=lambda a: table[d][a]["loss"])
            ratios[d] = table[d]["default"]["loss"] / table[d][best_vw[d]]["loss"]
    columns = ["best_constant", *ours, *vw]
    lines = [
        "# banditree vs Vowpal Wabbit: one pass of bandit classification",
        "",
        "Progressive mean 0/1 loss (exploration included; lower is better), mean over seeds.",
        "VW columns: the better of raw and z-scored features (marked).",
        "",
        "| data | half | K | rounds | seeds | " + " | ".join(columns) + " | default / best VW |",
        "|---|---|---|---|---|" + "---|" * (len(columns) + 1),
    ]
    halves = halves_of(records)
    datasets = sorted(datasets, key=lambda d: HALVES.index(halves[d]))
    for d in datasets:
        row = table[d]
        first = row["default"] if "default" in row else next(iter(row.values()))
        ratio = f"{ratios[d]:.3f} ({best_vw[d]})" if d in ratios else "-"
        cells = " | ".join(_cell(row.get(c), "loss") for c in columns)
        k = next(r["n_actions"] for r in records if r["dataset"] == d)
        lines.append(
            f"| {d} | {halves[d]} | {k} | {first['rounds']:.0f} | {first['seeds']} | {cells} "
            f"| {ratio} |"
        )
    gmean = geometric_mean(list(ratios.values()))
    worst = max(ratios.values()) if ratios else float("nan")
    lines += ["", f"Geometric mean of default / best VW: **{gmean:.3f}**; worst: {worst:.3f}."]
    lines += ["", "By half of the protocol (`benchmarks.protocol`):", ""]
    lines += half_lines(ratios, halves, "default / best VW")
    lines += ["", "Held-out accuracy of the greedy policy after the pass:", ""]
    lines += ["| data | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for d in datasets:
        cells = " | ".join(_cell(table[d].get(c), "accuracy") for c in columns)
        lines.append(f"| {d} | {cells} |")
    lines += ["", "Progressive loss of the default minus the best constant's on the same prefix:"]
    lines += [""]
    margins = []
    for d in datasets:
        if "default" not in table[d]:
            continue
        prefix, const = table[d]["default"]["prefix"], table[d]["best_constant"]["prefix"]
        parts = [f"{c}: {prefix[c] - const[c]:+.3f}" for c in prefix]
        late = [prefix[c] - const[c] for c in prefix if int(c) >= 2000]
        margins += late
        line = f"- {d}: " + ", ".join(parts)
        if late and max(late) > 0 and d in best_vw:  # behind: how the best VW fares there
            vw_prefix = table[d][best_vw[d]]["prefix"]
            vw_parts = [f"{c}: {vw_prefix[c] - const[c]:+.3f}" for c in prefix if c in vw_prefix]
            line += f" (best VW, {best_vw[d]}: " + ", ".join(vw_parts) + ")"
        lines.append(line)
    if margins:
        lines += ["", f"Largest margin from 2,000 rounds on: {max(margins):+.3f} (<= 0 wins)."]
    lines += ["", "Act + learn examples per second (all datasets and seeds together):", ""]
    speed = _speeds(records)
    for learner, eps in speed.items():
        lines.append(f"- {learner}: {eps:,.0f}")
    if "default" in speed and "vw_adf_squarecb" in speed:
        ratio = speed["default"] / speed["vw_adf_squarecb"]
        lines += ["", f"default / vw_adf_squarecb examples per second: **{ratio:.2f}**"]
    markdown = "\n".join(lines) + "\n"
    (out / "report.md").write_text(markdown)
    _plot(ratios, best_vw, gmean, out / "ratio.png")
    return markdown


def _speeds(records: Records) -> dict[str, float]:
    examples: dict[str, float] = defaultdict(float)
    seconds: dict[str, float] = defaultdict(float)
    for r in records:
        if r.get("examples_per_second"):
            examples[r["learner"]] += r["rounds"]
            seconds[r["learner"]] += r["rounds"] / r["examples_per_second"]
    return {k: examples[k] / seconds[k] for k in examples}


def _plot(ratios: dict[str, float], best_vw: dict[str, str], gmean: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(ratios)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 2), 4))
    colors = ["tab:green" if ratios[n] <= 1.0 else "tab:red" for n in names]
    ax.bar(names, [ratios[n] for n in names], color=colors)
    ax.axhline(1.0, color="black", linewidth=1, label="parity with best VW")
    ax.axhline(gmean, color="tab:blue", linestyle="--", label=f"geometric mean {gmean:.3f}")
    ax.set_ylabel("progressive loss: default / best VW")
    ax.set_title("banditree default vs the best of VW's algorithms (lower is better)")
    ax.tick_params(axis="x", rotation=45)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
