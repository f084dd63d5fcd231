"""Bandit classification: the ``boosted`` kind against TEUCB and the default, per half.

Usage::

    python -m benchmarks.quality.boosted_bandit [--half tuning|check] [--datasets ...]
        [--seeds 2] [--first-seed 0] [--max-rounds 5000] [--variants default teucb boosted ...]
        [--jobs 1] [--out runs/boosted_bandit]

One pass over each set's training split in the seeded order of
:mod:`benchmarks.quality.bandit_vs_vw` (its streams, so its VW figures compare), 0/1 loss of
the played action, progressive mean loss (exploration included).  CPU seconds of
``act`` + ``learn`` (refits included) per round are measured with ``process_time``.

``teucb_kind`` is Nilsson et al.'s TEUCB (arXiv 2402.06963) as far as this library's
``boosted`` kind can state it: one regression of the reward on (context, one-hot
action), 50 trees of depth 6, shrinkage 0.3, L2 1 and one row per leaf at least
(XGBoost's defaults, the paper's library), refitted on every round so far at 100 x
1.1^k rounds, uniform draws before the first fit, per-leaf reward variance / count
summed over trees, the highest mean + std played.  It runs on LightGBM, not XGBoost:
the fits differ in their split finding (histograms of ``max_bins`` 255 bins).

Sets are split by :mod:`benchmarks.quality.protocol` into a tuning half (the only one any
default is chosen on) and a check half; the external sets are a third group.  Every
report prints them separately.  ``teucb`` (the rival, as ``benchmarks.quality.bandit_rivals``
runs it: :class:`simulate.tree_ensemble.TreeEnsembleBandit`) runs beside the configs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from benchmarks.quality.bandit_vs_vw import CHECKPOINT_ROUNDS, run_tasks, stream
from benchmarks.quality.external_sets import EXTERNAL, load_external
from benchmarks.quality.protocol import CHECK, TUNING

HALVES = {"tuning": TUNING, "check": CHECK, "external": EXTERNAL}

_TEUCB = {
    "starter": "uniform",
    "exploration": "ucb",
    "optimism": 1.0,
    "refit_growth": 1.1,
    "linear_base": None,
    "window": 200_000,
    "max_refit_interval": 10_000_000,
    "shrinkage": 0.3,
    "l2": 1.0,
    "min_leaf_rows": 1,
    "max_bins": 255,
}
#: configs by name (``kind`` and ``options`` over the LearnerConfig defaults)
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "teucb_kind": {"kind": "boosted", "options": _TEUCB},
    "boosted": {"kind": "boosted"},
}


def variant(name: str) -> dict[str, Any]:
    """A named config, ``boosted:{json options}`` for ad-hoc options of the kind, or a
    JSON object of config fields (``{"kind": "boosted", "height": 4}``)."""
    if name in VARIANTS:
        return VARIANTS[name]
    if name.startswith("{"):
        config: dict[str, Any] = json.loads(name)
        return config
    if name.startswith("boosted:"):
        return {"kind": "boosted", "options": json.loads(name[len("boosted:") :])}
    raise ValueError(f"unknown variant {name!r}")


def run(name: str, variant_name: str, seed: int, max_rounds: int) -> dict[str, Any]:
    """One pass of one variant on one set and seed."""
    ds = load_external(name) if name in EXTERNAL else load(name)
    if variant_name == "teucb":
        from benchmarks.quality.bandit_rivals import run_tree_ensemble

        rival = run_tree_ensemble(ds, "ucb", seed, max_rounds)
        return {
            "dataset": name,
            "seed": seed,
            "rounds": rival["rounds"],
            "progressive_loss": rival["progressive_loss"],
            "test_accuracy": rival["test_accuracy"],
            "cpu_ms_per_round": 1e3 * rival["cpu_per_round"],
        }
    config = variant(variant_name)
    x, y, _ = stream(ds, seed, max_rounds)
    learner = build_learner(
        {"n_features": ds.n_features, "n_actions": ds.n_classes, **config, "seed": seed}
    )
    losses = []
    cpu = time.process_time()
    for row, label in zip(x, y.tolist(), strict=True):
        decision = learner.act(row)
        loss = float(decision.action != label)
        learner.learn(decision, Feedback(loss=loss))
        losses.append(loss)
    cpu = time.process_time() - cpu
    accuracy = float(np.mean(learner.predict(ds.X_test) == ds.y_test))
    cumulative = np.cumsum(losses)
    return {
        "dataset": name,
        "seed": seed,
        "rounds": len(y),
        "progressive_loss": float(cumulative[-1] / len(y)),
        # the same prefixes as the rivals' records (the small-sample regime)
        "prefix_loss": {
            str(c): float(cumulative[c - 1] / c) for c in CHECKPOINT_ROUNDS if c <= len(y)
        },
        "test_accuracy": accuracy,
        "cpu_ms_per_round": 1e3 * cpu / len(y),
    }


def run_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """One (set, seed, variant) task of :func:`main`: its one record, labelled."""
    result = run(task["dataset"], task["variant"], task["seed"], task["max_rounds"])
    return [{**result, "variant": task["variant"]}]


def report(records: list[dict[str, Any]], names: list[str]) -> str:
    """Markdown: mean loss per set and variant, each half's geometric mean ratio to teucb."""
    sets = [s for s in (*TUNING, *CHECK, *EXTERNAL) if any(r["dataset"] == s for r in records)]
    sets += sorted({r["dataset"] for r in records} - set(sets))

    def mean(s: str, v: str, key: str) -> float:
        vals = [r[key] for r in records if r["dataset"] == s and r["variant"] == v]
        return float(np.mean(vals)) if vals else float("nan")

    lines = [
        "| half | data | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for s in sets:
        half = next((h for h, group in HALVES.items() if s in group), "-")
        cells = [
            f"{mean(s, v, 'progressive_loss'):.4f} ({mean(s, v, 'cpu_ms_per_round'):.2f} ms)"
            for v in names
        ]
        lines.append(f"| {half} | {s} | " + " | ".join(cells) + " |")
    if "teucb" in names:
        for half, group in HALVES.items():
            here = [s for s in sets if s in group]
            if not here:
                continue
            ratios = []
            for v in names:
                r = [
                    mean(s, v, "progressive_loss") / mean(s, "teucb", "progressive_loss")
                    for s in here
                ]
                ratios.append(f"{v} {float(np.exp(np.mean(np.log(r)))):.3f}")
            lines.append(f"\n{half} half, geometric mean of loss / teucb: " + ", ".join(ratios))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=[*HALVES, "all"], default="tuning")
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-rounds", type=int, default=5000)
    parser.add_argument("--variants", nargs="+", default=["default", "teucb", "boosted"])
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("runs/boosted_bandit"))
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.datasets is None:
        args.datasets = {**HALVES, "all": (*TUNING, *CHECK, *EXTERNAL)}[args.half]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "results.jsonl"
    tasks = [
        {"dataset": name, "seed": seed, "variant": v, "max_rounds": args.max_rounds}
        for name in args.datasets
        for seed in range(args.first_seed, args.first_seed + args.seeds)
        for v in args.variants
    ]
    # started afresh, as bandit_rivals does
    run_tasks(run_task, tasks, path, args.jobs, "set x seed x variant", args.no_progress)
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    print(report(records, args.variants))


if __name__ == "__main__":
    main()
