"""The ``boosted`` kind against every rival of ``benchmarks.bandit_rivals``, per half.

Usage::

    python -m benchmarks.boosted_bandit_report --ours runs/boosted_bandit/results.jsonl
        --rivals runs/bandit_rivals/results.jsonl [--variant boosted]

``--ours``: records of :mod:`benchmarks.boosted_bandit` (or of ``bandit_rivals`` run
with ``--name`` the variant, as for the categorical table); ``--rivals``: records of
:mod:`benchmarks.bandit_rivals` on the same sets, seeds and rounds (the same streams:
both read :func:`benchmarks.bandit_vs_vw.stream`; their ``default`` rows agree to the
last digit).  Per set: the default, TEUCB, TETS, VW's best (the better of raw and
z-scored features per algorithm, the best algorithm), the variant, and the variant's and
the default's ratio to the best rival (TEUCB, TETS or any VW); per half the geometric
means of those ratios.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.external_sets import EXTERNAL
from benchmarks.protocol import CHECK, TUNING

HALVES = {"tuning": TUNING, "check": CHECK, "external": EXTERNAL}


def _key(r: dict[str, Any]) -> tuple[str, str]:
    """(half, set) of a record: the categorical table apart (its sets also sit in the
    numeric halves, read there as numbers)."""
    if r.get("table") == "categorical" or r.get("categorical"):
        return "categorical", r["dataset"]
    half = next((h for h, sets in HALVES.items() if r["dataset"] in sets), "other")
    return half, r["dataset"]


def _means(records: list[dict[str, Any]], key: str) -> dict[tuple[str, str, str], float]:
    """Mean progressive loss over seeds per (half, set, ``key`` value [+ form]); ``key``
    falls back to ``learner`` (``bandit_rivals``' own records of the learner)."""
    runs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in records:
        name = r.get(key, r.get("learner", "")) + (f"|{r['form']}" if r.get("form") else "")
        runs[(*_key(r), name)].append(r["progressive_loss"])
    return {k: float(np.mean(v)) for k, v in runs.items()}


def table(ours: list[dict[str, Any]], rivals: list[dict[str, Any]], variant: str) -> str:
    """Markdown: per set and half the losses, ratios to the best rival, geometric means."""
    mine = _means(ours, "variant")
    theirs = _means(rivals, "learner")
    lines = [
        "| half | data | default | TEUCB | TETS | best VW | "
        f"{variant} | {variant} / best rival | default / best rival |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups = [*HALVES, "categorical"]
    ratios: dict[str, dict[str, list[float]]] = {h: {"ours": [], "default": []} for h in groups}
    cells = sorted(
        {(h, s) for h, s, _ in mine if h in groups}, key=lambda k: (groups.index(k[0]), k[1])
    )
    for half, s in cells:
        if (half, s, variant) not in mine or (half, s, "default") not in theirs:
            continue
        vw: dict[str, float] = {}
        for (h, d, name), loss in theirs.items():  # the better form of each algorithm
            if (h, d) == (half, s) and name.startswith("vw"):
                algorithm = name.split("|")[0]
                vw[algorithm] = min(vw.get(algorithm, loss), loss)
        best_vw = min(vw, key=lambda a: vw[a])
        teucb, tets = theirs[(half, s, "teucb")], theirs[(half, s, "tets")]
        best = min(teucb, tets, vw[best_vw])
        default = theirs[(half, s, "default")]
        loss = mine[(half, s, variant)]
        ratios[half]["ours"].append(loss / best)
        ratios[half]["default"].append(default / best)
        lines.append(
            f"| {half} | {s} | {default:.4f} | {teucb:.4f} | {tets:.4f} | "
            f"{vw[best_vw]:.4f} ({best_vw}) | {loss:.4f} | {loss / best:.3f} | "
            f"{default / best:.3f} |"
        )
    lines.append("")
    for half, r in ratios.items():
        if r["ours"]:
            g = {k: float(np.exp(np.mean(np.log(v)))) for k, v in r.items()}
            worst = max(r["ours"])
            lines.append(
                f"- {half} ({len(r['ours'])} sets): geometric mean of loss / best rival: "
                f"{variant} {g['ours']:.3f} (worst {worst:.3f}), default {g['default']:.3f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", type=Path, nargs="+", required=True)
    parser.add_argument("--rivals", type=Path, nargs="+", required=True)
    parser.add_argument("--variant", default="boosted")
    args = parser.parse_args(argv)

    def read(paths: list[Path]) -> list[dict[str, Any]]:
        return [json.loads(line) for p in paths for line in p.read_text().splitlines() if line]

    print(table(read(args.ours), read(args.rivals), args.variant))


if __name__ == "__main__":
    main()
