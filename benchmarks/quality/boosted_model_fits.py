"""The boosted kind's fit against TEUCB's, on the same logged rows: held-out accuracy and error.

Usage::

    python -m benchmarks.quality.boosted_model_fits [--datasets fars satimage ...] [--seed 0]
        [--max-rounds 5000] [--test-rows 4000] [--fits ours no_base ...] [--out PATH]

Two logs per set and seed: the rounds the ``boosted`` kind (defaults) played on the stream
of :mod:`benchmarks.quality.bandit_vs_vw`, and the rounds TEUCB played on the same stream
(:class:`simulate.tree_ensemble.TreeEnsembleBandit`).  Every fit of :data:`FITS` (the
kind's settings, then one difference at a time towards TEUCB's, then TEUCB's recipe as
:func:`~banditree.models.boosted.fit.fit_ensemble` states it) is fitted on every row of
each log, and scored on the set's test split (``--test-rows`` drawn from it) with full
information: the accuracy of the action of the highest predicted reward, the mean
squared error of every action's predicted reward (1 for the label, 0 for the others) and
that of the label's own.  So the model is compared on the same data, apart from the
data each policy gathered.  One record per (set, log, fit), and one per set for each
learner as it ran (its progressive loss, and the test accuracy of its own models).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.datasets import Dataset, load
from banditree.learners import Feedback, build_learner
from banditree.learners.boosted import BoostedBandit
from banditree.models.boosted.fit import BoostingSettings, augment, fit_ensemble
from banditree.models.boosted.frozen import FrozenBoostedEnsemble
from benchmarks.quality.bandit_vs_vw import stream
from benchmarks.quality.external_sets import EXTERNAL, load_external

Rows = tuple[FloatArray, IntArray, FloatArray]

#: the kind's fit (its defaults: :class:`~banditree.learners.boosted_options.BoostedOptions`)
OURS = BoostingSettings(
    n_trees=50, depth=6, learning_rate=0.3, min_leaf_rows=5, l2=1.0, max_bins=63, linear_l2=10.0
)
#: each fit's difference from :data:`OURS`; ``teucb_fit`` is TEUCB's (no base, 20 rows a
#: leaf, LightGBM's 255 bins, no L2)
FITS: dict[str, dict[str, Any]] = {
    "ours": {},
    "no_base": {"linear_l2": None},
    "base1": {"linear_l2": 1.0},
    "base100": {"linear_l2": 100.0},
    "lr0.1": {"learning_rate": 0.1},
    "lr0.1_150t": {"learning_rate": 0.1, "n_trees": 150},
    "bins255": {"max_bins": 255},
    "depth4": {"depth": 4},
    "depth8": {"depth": 8},
    "leaf1": {"min_leaf_rows": 1},
    "leaf20": {"min_leaf_rows": 20},
    "l2_0": {"l2": 0.0},
    "teucb_fit": {"linear_l2": None, "min_leaf_rows": 20, "max_bins": 255, "l2": 0.0},
}


def dataset(name: str) -> Dataset:
    return load_external(name) if name in EXTERNAL else load(name)


def run_ours(ds: Dataset, seed: int, rounds: int) -> tuple[BoostedBandit, Rows, float]:
    """The kind's pass over the stream: the learner, its window (every round, oldest
    first) and its progressive loss."""
    x, y, _ = stream(ds, seed, rounds)
    learner = build_learner(
        {"n_features": ds.n_features, "n_actions": ds.n_classes, "kind": "boosted", "seed": seed}
    )
    assert isinstance(learner, BoostedBandit)
    losses = []
    for row, label in zip(x, y.tolist(), strict=True):
        d = learner.act(row)
        loss = float(d.action != label)
        learner.learn(d, Feedback(loss=loss))
        losses.append(loss)
    contexts, actions, rewards = learner._window.rows()
    return learner, (contexts.copy(), actions.copy(), rewards.copy()), float(np.mean(losses))


def run_teucb(ds: Dataset, seed: int, rounds: int) -> tuple[Any, Rows, float]:
    """TEUCB's pass over the same stream: the bandit, its rows and its progressive loss."""
    from simulate.tree_ensemble import TreeEnsembleBandit

    x, y, uniforms = stream(ds, seed, rounds)
    bandit = TreeEnsembleBandit(ds.n_classes, ds.n_features, rule="ucb", seed=seed)
    losses = []
    for row, label, u in zip(x, y.tolist(), uniforms, strict=True):
        action, _, _ = bandit.choose(row, u)
        loss = float(action != label)
        bandit.observe(row, action, 1.0 - loss)
        losses.append(loss)
    table, d = np.vstack(bandit._rows), ds.n_features
    rows = (table[:, :d].copy(), np.argmax(table[:, d:], axis=1), np.asarray(bandit._rewards))
    return bandit, rows, float(np.mean(losses))


def action_rewards(ensemble: FrozenBoostedEnsemble, x: FloatArray, k: int) -> FloatArray:
    """Every action's predicted reward ``(m, K)`` of contexts ``x`` ``(m, d)``."""
    m = len(x)
    inputs = augment(np.repeat(x, k, axis=0), np.tile(np.arange(k), m), k)
    out: FloatArray = ensemble.predict_rows(inputs).reshape(m, k)
    return out


def scores(predicted: FloatArray, labels: IntArray) -> dict[str, float]:
    """Full-information scores of predicted rewards ``(m, K)`` against the labels."""
    k = predicted.shape[1]
    truth = np.eye(k)[labels]
    own = predicted[np.arange(len(labels)), labels]
    return {
        "accuracy": float(np.mean(np.argmax(predicted, axis=1) == labels)),
        "mse_all_actions": float(np.mean((predicted - truth) ** 2)),
        "mse_label_action": float(np.mean((own - 1.0) ** 2)),
    }


def run_set(
    name: str, seed: int, rounds: int, test_rows: int, fits: list[str]
) -> list[dict[str, Any]]:
    """Every record of one set and seed."""
    ds = dataset(name)
    k = ds.n_classes
    pick = np.random.default_rng(0).permutation(len(ds.y_test))[:test_rows]
    x_test, y_test = ds.X_test[pick], ds.y_test[pick]
    head = {"dataset": name, "seed": seed, "max_rounds": rounds}
    learner, ours, our_loss = run_ours(ds, seed, rounds)
    assert learner._ensemble is not None and learner._starter is not None
    records = [
        {
            **head, "learner": "boosted", "progressive_loss": our_loss, "fits": learner.fits,
            "test_accuracy": float(np.mean(learner.predict(x_test) == y_test)),
            "tree_test_accuracy": float(np.mean(learner._starter.predict(x_test) == y_test)),
            "ensemble": scores(action_rewards(learner._ensemble, x_test, k), y_test),
        }
    ]  # fmt: skip
    bandit, theirs, their_loss = run_teucb(ds, seed, rounds)
    means, _ = bandit.estimates(x_test)
    records.append(
        {
            **head,
            "learner": "teucb",
            "progressive_loss": their_loss,
            "ensemble": scores(means, y_test),
        }
    )
    for log, rows in (("boosted", ours), ("teucb", theirs)):
        for fit in fits:
            ensemble = fit_ensemble(*rows, k, replace(OURS, **FITS[fit]), seed)
            predicted = action_rewards(ensemble, x_test, k)
            records.append(
                {**head, "log": log, "rows": len(rows[2]), "fit": fit, **scores(predicted, y_test)}
            )
    return records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["fars", "satimage"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-rounds", type=int, default=5000)
    parser.add_argument("--test-rows", type=int, default=4000)
    parser.add_argument("--fits", nargs="+", default=list(FITS), choices=list(FITS))
    parser.add_argument("--out", type=Path, default=Path("runs/boosted_model_fits.jsonl"))
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for name in args.datasets:
            for record in run_set(name, args.seed, args.max_rounds, args.test_rows, args.fits):
                out.write(json.dumps(record) + "\n")
                out.flush()
                if "fit" in record:
                    print(
                        f"{name} seed {args.seed} log {record['log']} fit {record['fit']}: "
                        f"accuracy {record['accuracy']:.4f}, "
                        f"all-action error {record['mse_all_actions']:.4f}"
                    )


if __name__ == "__main__":
    main()
