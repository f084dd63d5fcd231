"""A learner against its strongest rivals, per half of the protocol: VW's explorers, TEUCB, TETS.

Usage::

    python -m benchmarks.bandit_rivals [--learner '{"kind": "dgt_forest"}'] [--name NAME]
        [--tables numeric external categorical] [--datasets letter ...] [--half tuning]
        [--seeds 2]
        [--max-rounds 10000] [--vw vw_adf_regcbopt ...] [--rivals teucb tets]
        [--jobs 1] [--out runs/bandit_rivals] [--report-only]

Three tables: ``numeric`` (the 14 bundled classification sets, split into the tuning and
the check half of :mod:`benchmarks.protocol`), ``external`` (the public sets no default
was tuned on, :data:`benchmarks.external_sets.EXTERNAL`) and ``categorical`` (the
categorical table of :mod:`benchmarks.bandit_vs_vw`: a schema for the learner, one-hot
names for VW, integer codes for the tree ensembles).  One pass over each set's training
split in a seeded order (at most ``--max-rounds`` rounds); every competitor of a seed
sees the same stream and samples with the same uniform numbers.

The learner under test is the :class:`~banditree.learners.LearnerConfig` defaults with
the overrides of ``--learner`` (a JSON object; any config, any ``kind``).  Its rivals:
every VW algorithm of :data:`simulate.vw.VW_ALGORITHMS` (epsilon, bag, cover, SquareCB,
RegCB-opt, cover-NU; the better of raw and z-scored features), TEUCB and TETS
(:mod:`simulate.tree_ensemble`), and the best constant action in hindsight.

Reported per set and half: each one's progressive loss (exploration included), the
learner's ratio to the best rival and to the best VW, the CPU seconds per round of act
+ learn (``time.process_time``, refits included), and the geometric means per half.
Writes ``results.jsonl`` and ``report.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import CLASSIFICATION, Dataset, load
from benchmarks import categorical_sets
from benchmarks.bandit_rivals_report import write_report
from benchmarks.bandit_vs_vw import (
    _summary,
    best_constant,
    run_banditree,
    run_tasks,
    run_vw,
    stream,
)
from benchmarks.external_sets import EXTERNAL, load_external
from benchmarks.protocol import CHECK, TUNING
from simulate.tree_ensemble import Rule, TreeEnsembleBandit
from simulate.vw import VW_ALGORITHMS

TABLES = ("numeric", "external", "categorical")
#: the tree-ensemble rivals and their rule
TREE_ENSEMBLES: dict[str, Rule] = {"teucb": "ucb", "tets": "ts"}


def table_sets(table: str) -> tuple[str, ...]:
    """The sets of one table."""
    if table == "numeric":
        return tuple(CLASSIFICATION)
    if table == "external":
        return tuple(EXTERNAL)
    if table == "categorical":
        return tuple(categorical_sets.CATEGORICAL_SETS)
    raise ValueError(f"unknown table {table!r}; known: {', '.join(TABLES)}")


def run_tree_ensemble(ds: Dataset, rule: Rule, seed: int, max_rounds: int) -> dict[str, Any]:
    """One pass of TEUCB / TETS on the seed's stream (codes of categories as numbers)."""
    x, y, uniforms = stream(ds, seed, max_rounds)
    bandit = TreeEnsembleBandit(ds.n_classes, ds.n_features, rule=rule, seed=seed)
    losses: list[float] = []
    wall = time.perf_counter()
    cpu = time.process_time()
    for row, label, u in zip(x, y.tolist(), uniforms, strict=True):
        action, _, _ = bandit.choose(row, u)
        loss = float(action != label)
        bandit.observe(row, action, 1.0 - loss)
        losses.append(loss)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    means, _ = bandit.estimates(ds.X_test)
    accuracy = float(np.mean(np.argmax(means, axis=1) == ds.y_test))
    return _summary(losses, wall, accuracy, cpu)


def run_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Every competitor on one (table, dataset, seed): a list of result records."""
    name, seed, rounds, table = task["dataset"], task["seed"], task["max_rounds"], task["table"]
    categorical = table == "categorical"
    ds = load_external(name) if name in EXTERNAL else load(name)
    head = {
        "dataset": name,
        "seed": seed,
        "n_actions": ds.n_classes,
        "categorical": categorical,
        "table": table,
    }
    records = [{**head, "learner": "best_constant", **best_constant(ds, seed, rounds)}]
    result = run_banditree(ds, task["learner"], seed, rounds, categorical)
    records.append({**head, "learner": task["name"], "family": "banditree", **result})
    all_categories = categorical and categorical_sets.categorical_mask(ds).all()
    for algorithm in task["vw"]:
        for form in ("raw",) if all_categories else ("raw", "z"):
            result = run_vw(ds, VW_ALGORITHMS[algorithm], form == "z", seed, rounds, categorical)
            records.append({**head, "learner": algorithm, "family": "vw", "form": form, **result})
    for rival in task["rivals"]:
        result = run_tree_ensemble(ds, TREE_ENSEMBLES[rival], seed, rounds)
        records.append({**head, "learner": rival, "family": "tree_ensemble", **result})
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", default="{}", help="LearnerConfig overrides (JSON object)")
    parser.add_argument(
        "--name", default=None, help="its label (default: 'default' or 'candidate')"
    )
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--datasets", nargs="+", default=None, help="only these sets")
    parser.add_argument(
        "--half",
        choices=("tuning", "check"),
        default=None,
        help="only this half of the bundled sets (benchmarks.protocol); tune on 'tuning'",
    )
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-rounds", type=int, default=10_000)
    parser.add_argument("--vw", nargs="*", default=list(VW_ALGORITHMS), choices=list(VW_ALGORITHMS))
    parser.add_argument(
        "--rivals", nargs="*", default=list(TREE_ENSEMBLES), choices=list(TREE_ENSEMBLES)
    )
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("runs/bandit_rivals"))
    parser.add_argument("--report-only", action="store_true", help="re-render from results")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        learner = json.loads(args.learner)
    except json.JSONDecodeError as exc:
        parser.error(f"--learner is not JSON: {exc}")
    if not isinstance(learner, dict):
        parser.error("--learner must be a JSON object of LearnerConfig fields")
    name = args.name or ("default" if not learner else "candidate")
    if args.half is not None:
        args.tables = ["numeric"]
        half = TUNING if args.half == "tuning" else CHECK
        args.datasets = [d for d in half if args.datasets is None or d in args.datasets]
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.jsonl"
    if not args.report_only:
        tasks = [
            {
                "table": table,
                "dataset": d,
                "seed": s,
                "max_rounds": args.max_rounds,
                "learner": learner,
                "name": name,
                "vw": args.vw,
                "rivals": args.rivals,
            }
            for table in args.tables
            for d in table_sets(table)
            if args.datasets is None or d in args.datasets
            for s in range(args.first_seed, args.first_seed + args.seeds)
        ]
        if not tasks:
            parser.error("--datasets: none of them is in --tables")
        run_tasks(run_task, tasks, results_path, args.jobs, "set x seed", args.no_progress)
    records = [json.loads(line) for line in results_path.read_text().splitlines() if line]
    print(write_report(records, args.out))


if __name__ == "__main__":
    main()
