"""`banditree train`'s default grid against the full Table 11 grid: accuracy, time, estimate.

``python -m benchmarks.quality.train_grid [--sets tic_tac_toe cmc ...] [--seed 0] [--height 6]
[--jobs 2] [--full] [--out FILE.json]``

Each set is trained by the protocol of ``banditree train NAME`` (categorical sets with
their feature schema) with the default grid (``paper-l1``: Table 11's L = 1 runs) and,
with ``--full``, the full grid (``paper``: also the 15 L = 3 runs).  It prints test
accuracy (or RMSE) of both, the difference in points, wall time and their ratio, and
how good the time-left estimate was: the predicted total (elapsed + estimated left)
at 10% and 50% of the work units, as a ratio to the real total.  The goal: the
default within 0.5 point of the full grid, in minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from banditree.datasets.sources import load_source
from banditree.datasets.tables import encoded
from banditree.supervised.command import DEFAULT_GRID
from banditree.supervised.grid import load_grid
from banditree.supervised.protocol import ProtocolOptions, run_protocol

DEFAULT_SETS = ("tic_tac_toe", "cmc", "credit_a", "segmentation")


def _estimate_ratio(report: dict[str, Any], at: float) -> float | None:
    """Predicted total / real total, from the first estimate at or past ``at`` of the work."""
    for e in report["time_left_estimates"]:
        if e["done_share"] >= at:
            return float((e["elapsed"] + e["seconds_left"]) / report["seconds"])
    return None


def run(source: str, grid: str, args: argparse.Namespace) -> dict[str, Any]:
    ds = load_source(source, seed=args.seed)
    if ds.schema is not None:
        ds = encoded(ds)
    options = ProtocolOptions(
        height=args.height,
        grid=load_grid(grid, ds.task),
        seed=args.seed,
        progress=not args.no_progress,
        jobs=args.jobs,
    )
    report = run_protocol(ds, options).report
    figure = "test_accuracy" if ds.task == "classification" else "test_rmse"
    scale = 100.0 if ds.task == "classification" else 1.0
    row = {
        "set": source,
        "grid": grid,
        "runs": len(report["grid"]),
        "test": scale * report[figure],
        "chosen": report["chosen"]["settings"],
        "seconds": report["seconds"],
        "estimate_at_10pct": _estimate_ratio(report, 0.1),
        "estimate_at_50pct": _estimate_ratio(report, 0.5),
    }
    print(
        f"  {source} {grid}: test {row['test']:.2f} in {row['seconds']:.0f} s, "
        f"estimate/real at 10% {row['estimate_at_10pct']}, at 50% {row['estimate_at_50pct']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(DEFAULT_SETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--height", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--full", action="store_true", help="also the full grid (--grid paper)")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)  # as banditree train --threads 1: fastest at batch 128
    rows = []
    for source in args.sets:
        rows.append(run(source, DEFAULT_GRID, args))
        if args.full:
            rows.append(run(source, "paper", args))
    print("\n| set | grid | runs | test | seconds | est./real at 10% | at 50% |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        e10 = f"{r['estimate_at_10pct']:.2f}" if r["estimate_at_10pct"] else "-"
        e50 = f"{r['estimate_at_50pct']:.2f}" if r["estimate_at_50pct"] else "-"
        print(
            f"| {r['set']} | {r['grid']} | {r['runs']} | {r['test']:.2f} "
            f"| {r['seconds']:.0f} | {e10} | {e50} |"
        )
    if args.full:
        print("\n| set | default - full (pt) | time full / default |")
        print("|---|---|---|")
        for default, full in zip(rows[::2], rows[1::2], strict=True):
            print(
                f"| {default['set']} | {default['test'] - full['test']:+.2f} "
                f"| {full['seconds'] / default['seconds']:.1f}x |"
            )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
