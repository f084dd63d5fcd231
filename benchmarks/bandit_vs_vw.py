"""One pass of bandit classification: DGT-Bandit vs linear epsilon-greedy vs Vowpal Wabbit.

Usage::

    python -m benchmarks.bandit_vs_vw [--datasets letter pendigits satimage] [--seeds 3]

Every learner sees the same stream (the training split in a seeded order) once, plays
an action per example and receives only its 0/1 loss (one-point bandit feedback).

* progressive accuracy: mean reward of the actions actually played (exploration
  included), the online bandit score;
* regret: the learner's mean per-round loss minus that of the full-information DGT
  (same tree, told the label every round, scored by its greedy action before
  learning) on the same stream; the full-information learner is the practical
  best-in-hindsight reference (its own mean loss is printed as ``full``).

VW runs as ``--cb_explore K --epsilon 0.3`` (the same exploration as DGT-Bandit) and
with the paper's setting ``-l 0.01 --epsilon 0.5``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from banditree.models.dgt.tree_ops import FloatArray
from simulate.vw import VWBandit, vw_line

#: DGT-Bandit as benchmarked (h = 6); see LearnerConfig for the defaults
DGT: dict[str, Any] = {"kind": "dgt", "height": 6}


def run_ours(config: dict[str, Any], x: FloatArray, y: np.ndarray, greedy: bool = False) -> float:
    """Mean per-round 0/1 loss of played (or, for ``greedy``, greedy) actions."""
    learner = build_learner(config)
    losses = 0.0
    for row, label in zip(x, y.tolist(), strict=True):
        d = learner.act(row)
        if greedy:
            losses += float(d.greedy_action != label)
            learner.learn(d, Feedback(label=label))
        else:
            loss = float(d.action != label)
            losses += loss
            learner.learn(d, Feedback(loss=loss))
    return losses / len(y)


def run_vw(
    k: int, x: FloatArray, y: np.ndarray, seed: int, epsilon: float, lr: float | None
) -> float:
    vw = VWBandit(k, epsilon=epsilon, seed=seed, learning_rate=lr)
    uniforms = np.random.default_rng(seed + 1000).random(len(y)).tolist()
    losses = 0.0
    for row, label, u in zip(x.tolist(), y.tolist(), uniforms, strict=True):
        features = vw_line(row)
        action, p, _ = vw.act(features, u)
        loss = float(action != label)
        losses += loss
        vw.learn(features, action, p, loss)
    vw.close()
    return losses / len(y)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["letter", "pendigits", "satimage"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="cap the stream length (0 = all)")
    args = parser.parse_args(argv)
    print("mean over seeds of progressive accuracy (acc) and regret (mean loss - full-info DGT's)")
    header = f"{'dataset':10s} {'learner':22s} {'acc':>7s} {'regret':>7s} {'vs VW e0.3':>10s}"
    print(header)
    for name in args.datasets:
        ds = load(name)
        k = ds.n_classes
        base = {"n_features": ds.n_features, "n_actions": k}
        learners: dict[str, Callable[[FloatArray, np.ndarray, int], float]] = {
            "DGT-Bandit h=6": lambda x, y, s, b=base: run_ours({**b, **DGT, "seed": s}, x, y),
            "linear eps-greedy": lambda x, y, s, b=base: run_ours(
                {**b, "kind": "linear", "seed": s}, x, y
            ),
            "VW cb_explore e=0.3": lambda x, y, s, k=k: run_vw(k, x, y, s, 0.3, None),
            "VW paper l=0.01 e=0.5": lambda x, y, s, k=k: run_vw(k, x, y, s, 0.5, 0.01),
        }
        losses: dict[str, list[float]] = {n: [] for n in ["full", *learners]}
        for seed in range(args.seeds):
            order = np.random.default_rng(seed).permutation(len(ds.y_train))
            if args.limit:
                order = order[: args.limit]
            x, y = ds.X_train[order], ds.y_train[order]
            full = {**base, **DGT, "estimator": "full", "seed": seed}
            losses["full"].append(run_ours(full, x, y, greedy=True))
            for learner_name, run in learners.items():
                losses[learner_name].append(run(x, y, seed))
        full_loss = np.array(losses["full"])
        vw_regret = float(np.mean(np.array(losses["VW cb_explore e=0.3"]) - full_loss))
        print(f"{name:10s} {'full-information DGT':22s} {1 - full_loss.mean():7.4f} {0.0:7.4f}")
        for learner_name in learners:
            loss = np.array(losses[learner_name])
            regret = float(np.mean(loss - full_loss))
            print(
                f"{name:10s} {learner_name:22s} {1 - loss.mean():7.4f} {regret:7.4f}"
                f" {regret / vw_regret:10.2f}"
            )


if __name__ == "__main__":
    main()
