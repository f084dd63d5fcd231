"""The report of :mod:`benchmarks.bandit_rivals`: per table and half, each competitor's loss,
the learner's ratio to the best rival, CPU per round, geometric means per half."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bandit_vs_vw_report import geometric_mean
from benchmarks.protocol import HALVES, half_of

Records = list[dict[str, Any]]
TABLE_TITLES = {
    "numeric": "The 14 bundled sets",
    "external": "External sets (never seen by a default)",
    "categorical": "Categorical sets (a schema for the learner)",
}


def summarize(records: Records) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """Per (table, dataset), per competitor: means over seeds of the better feature form.

    Each entry: ``loss``, ``cpu`` (seconds per round; None for the constant), ``form``,
    ``family``, ``seeds``, ``rounds``.
    """
    runs: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        runs[(r.get("table", ""), r["dataset"], r["learner"], r.get("form", ""))].append(r)
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for (table, dataset, learner, form), rs in runs.items():
        cpus = [r["cpu_per_round"] for r in rs if r.get("cpu_per_round") is not None]
        entry = {
            "loss": float(np.mean([r["progressive_loss"] for r in rs])),
            "cpu": float(np.mean(cpus)) if cpus else None,
            "form": form,
            "family": rs[0].get("family", ""),
            "seeds": len(rs),
            "rounds": float(np.mean([r["rounds"] for r in rs])),
        }
        best = out[(table, dataset)].get(learner)
        if best is None or entry["loss"] < best["loss"]:  # VW: the better of raw and z
            out[(table, dataset)][learner] = entry
    return dict(out)


def _ms(entry: dict[str, Any] | None) -> str:
    if entry is None or entry["cpu"] is None:
        return "-"
    return f"{entry['cpu'] * 1e3:.3f}"


def _loss(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "-"
    return f"{entry['loss']:.4f}" + (f" ({entry['form']})" if entry["form"] == "z" else "")


def write_report(records: Records, out: Path) -> str:
    """Write ``report.md`` to ``out``; return the markdown."""
    table = summarize(records)
    learner = next(r["learner"] for r in records if r.get("family") == "banditree")
    rivals = list(
        dict.fromkeys(r["learner"] for r in records if r.get("family") in ("vw", "tree_ensemble"))
    )
    vw = [name for name in rivals if name.startswith("vw")]
    lines = [
        f"# {learner} against its strongest rivals",
        "",
        "Progressive mean 0/1 loss (exploration included; lower is better), mean over seeds;",
        "VW: the better of raw and z-scored features ((z) marks z-scored). `best` is the",
        f"rival of least loss; `ratio` is {learner} / best rival (<= 1.0: {learner} leads).",
        "CPU: milliseconds of process time per round, act + learn (refits included).",
    ]
    halves: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for name in ("numeric", "external", "categorical"):
        keys = [k for k in table if k[0] == name]
        if not keys:
            continue
        lines += ["", f"## {TABLE_TITLES[name]}"]
        by_half: dict[str, list[str]] = defaultdict(list)
        for _, dataset in keys:
            by_half[half_of(dataset, name == "categorical")].append(dataset)
        for half in HALVES:
            if half not in by_half:
                continue
            lines += ["", f"### {half} half", ""]
            lines += [
                f"| set | K | rounds | seeds | {learner} | "
                + " | ".join(rivals)
                + " | best | ratio | / best VW |",
                "|---|---|---|---|---|" + "---|" * (len(rivals) + 3),
            ]
            cpu_lines = [
                f"| set | {learner} | " + " | ".join(rivals) + " |",
                "|---|---|" + "---|" * len(rivals),
            ]
            for dataset in by_half[half]:
                row = table[(name, dataset)]
                ours = row.get(learner)
                present = [r for r in rivals if r in row]
                k = next(r["n_actions"] for r in records if r["dataset"] == dataset)
                cells = " | ".join(_loss(row.get(r)) for r in rivals)
                best = min(present, key=lambda r: row[r]["loss"]) if present else None
                best_vw = min(
                    [r for r in vw if r in row], key=lambda r: row[r]["loss"], default=None
                )
                ratio = vs_vw = "-"
                if ours is not None and best is not None:
                    value = ours["loss"] / max(row[best]["loss"], 1e-12)
                    halves[name][half][dataset] = value
                    ratio = f"**{value:.3f}**" if value > 1.0 else f"{value:.3f}"
                if ours is not None and best_vw is not None:
                    vs_vw = f"{ours['loss'] / max(row[best_vw]['loss'], 1e-12):.3f}"
                first = ours or next(iter(row.values()))
                lines.append(
                    f"| {dataset} | {k} | {first['rounds']:.0f} | {first['seeds']} | "
                    f"{_loss(ours)} | {cells} | {best or '-'} | {ratio} | {vs_vw} |"
                )
                cpu_lines.append(
                    f"| {dataset} | {_ms(ours)} | "
                    + " | ".join(_ms(row.get(r)) for r in rivals)
                    + " |"
                )
            ratios = halves[name][half]
            if ratios:
                losing = [f"{d} {v:.3f}" for d, v in ratios.items() if v > 1.0]
                lines += [
                    "",
                    f"Geometric mean of {learner} / best rival over {len(ratios)} sets: "
                    f"**{geometric_mean(list(ratios.values())):.3f}**; behind the best rival on "
                    + (", ".join(losing) if losing else "none")
                    + ".",
                ]
            lines += ["", "CPU ms per round:", "", *cpu_lines]
    lines += ["", "## Geometric means per half (of the ratio to the best rival)", ""]
    lines += ["| table | half | sets | geometric mean | worst |", "|---|---|---|---|---|"]
    for name, parts in halves.items():
        for half in HALVES:
            values = list(parts.get(half, {}).values())
            if values:
                lines.append(
                    f"| {name} | {half} | {len(values)} | {geometric_mean(values):.3f} | "
                    f"{max(values):.3f} |"
                )
    markdown = "\n".join(lines) + "\n"
    (out / "report.md").write_text(markdown)
    return markdown
