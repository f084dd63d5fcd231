"""Learning curves on the small categorical sets: the boosted kind against its best rivals.

Usage::

    python -m benchmarks.quality.boosted_small_curves [--datasets credit_a cmc] [--seeds 10]
        [--learner '{"kind": "boosted", "options": {...}}'] [--name NAME] [--rivals]
        [--out runs/boosted_small_curves.jsonl]

For each (set, seed) of the categorical table: the learner's 0/1 loss per block of
100 rounds (exploration included) and its held-out accuracy at rounds 100, 300 and 500
(the greedy action of the whole learner; for the boosted kind also of the online tree
alone and, once fitted, of the ensemble alone and of its linear base alone).  With
``--rivals``, VW RegCB-opt (both mellownesses, raw and z-scored) and TEUCB on the same
streams, their loss per block and their held-out accuracy at the end.  One JSON record
per (set, seed, competitor).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from benchmarks.quality import bandit_rivals, bandit_vs_vw, categorical_sets
from benchmarks.quality.bandit_vs_vw import stream
from simulate.vw import VW_ALGORITHMS

BLOCK = 100
SNAPSHOTS = (100, 300, 500)
RIVAL_VW = ("vw_adf_regcbopt", "vw_adf_regcbopt_m0.01")


def _blocks(losses: list[float]) -> list[float]:
    return [float(np.mean(losses[i : i + BLOCK])) for i in range(0, len(losses), BLOCK)]


def _component_accuracy(learner: Any, test_rows: Any, y_test: np.ndarray) -> dict[str, float]:
    """Held-out greedy accuracy of the learner and (boosted kind) of its parts."""
    out = {"learner": float(np.mean(learner.predict(test_rows) == y_test))}
    core = getattr(learner, "core", learner)
    features = getattr(learner, "features", None)
    x = features.encode_many(list(test_rows)) if features is not None else np.asarray(test_rows)
    starter = getattr(core, "_starter", None)
    if starter is not None:
        out["tree"] = float(np.mean(starter.predict(x) == y_test))
    ensemble = getattr(core, "_ensemble", None)
    if ensemble is not None:
        wide = np.array([core._wide(row) for row in x])
        mean = np.array([ensemble.action_scores(row)[0] for row in wide])
        out["ensemble"] = float(np.mean(np.argmax(mean, axis=1) == y_test))
        base = (
            ensemble.base[:, 0][None, :]
            + np.array([ensemble.standardized(row[: ensemble.n_context]) for row in wide])
            @ ensemble.base[:, 1:].T
        )
        out["base"] = float(np.mean(np.argmax(base, axis=1) == y_test))
    return out


def run_ours(name: str, overrides: dict[str, Any], seed: int) -> dict[str, Any]:
    ds = load(name)
    x, y, _ = stream(ds, seed, 5_000)
    config = {"n_actions": ds.n_classes, **overrides, "seed": seed}
    config["features"] = categorical_sets.schema_json(ds, None)
    rows = categorical_sets.contexts(ds, x)
    test = categorical_sets.contexts(ds, ds.X_test)
    learner = build_learner(config)
    losses: list[float] = []
    accuracy: dict[str, dict[str, float]] = {}
    for t, (row, label) in enumerate(zip(rows, y.tolist(), strict=True), start=1):
        decision = learner.act(row)
        loss = float(decision.action != label)
        learner.learn(decision, Feedback(loss=loss))
        losses.append(loss)
        if t in SNAPSHOTS:
            accuracy[str(t)] = _component_accuracy(learner, test, ds.y_test)
    accuracy["end"] = _component_accuracy(learner, test, ds.y_test)
    return {"loss": float(np.mean(losses)), "blocks": _blocks(losses), "accuracy": accuracy}


def _curve_of(run: Any, *args: Any) -> dict[str, Any]:
    captured: dict[str, Any] = {}
    original = bandit_vs_vw._summary

    def summary(losses: list[float], *rest: Any, **kw: Any) -> dict[str, Any]:
        captured["blocks"] = _blocks(losses)
        return original(losses, *rest, **kw)

    bandit_vs_vw._summary = summary  # type: ignore[assignment]
    bandit_rivals._summary = summary  # type: ignore[attr-defined]
    try:
        result = run(*args)
    finally:
        bandit_vs_vw._summary = original  # type: ignore[assignment]
        bandit_rivals._summary = original  # type: ignore[attr-defined]
    return {
        "loss": result["progressive_loss"],
        "blocks": captured["blocks"],
        "accuracy": {"end": {"learner": result["test_accuracy"]}},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["credit_a", "cmc"])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--learner", default='{"kind": "boosted"}')
    parser.add_argument("--name", default="boosted")
    parser.add_argument("--rivals", action="store_true")
    parser.add_argument("--no-learner", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("runs/boosted_small_curves.jsonl"))
    args = parser.parse_args(argv)
    overrides = json.loads(args.learner)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for name in args.datasets:
            ds = load(name)
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                head = {"dataset": name, "seed": seed}
                records = []
                if not args.no_learner:
                    records.append(
                        {**head, "learner": args.name, **run_ours(name, overrides, seed)}
                    )
                if args.rivals:
                    for algorithm in RIVAL_VW:
                        for form in ("raw", "z"):
                            result = _curve_of(
                                bandit_vs_vw.run_vw,
                                ds,
                                VW_ALGORITHMS[algorithm],
                                form == "z",
                                seed,
                                5_000,
                                True,
                            )
                            records.append({**head, "learner": algorithm, "form": form, **result})
                    result = _curve_of(bandit_rivals.run_tree_ensemble, ds, "ucb", seed, 5_000)
                    records.append({**head, "learner": "teucb", **result})
                for record in records:
                    out.write(json.dumps(record) + "\n")
                out.flush()
                print(
                    name,
                    seed,
                    [(r["learner"], r.get("form"), round(r["loss"], 4)) for r in records],
                    flush=True,
                )


if __name__ == "__main__":
    main()
