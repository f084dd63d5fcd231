"""Bandit regression (paper Table 6): final test RMSE with one-point and two-point feedback.

Usage::

    python -m benchmarks.bandit_regression [--splits 0 1] [--passes 10]

Datasets: the paper's Abalone and Comp-Activ (``cpu_act``) splits.  Each learner makes
``passes`` passes over the training split (a fresh seeded order per pass); every round
it plays a value and is told only the loss of what it played (one-point, eq. 9) or
the losses at its two probes (two-point, eq. 10).  Losses: squared and Huber
(threshold 1, in target units).  The supervised reference is the same DGT learned
with the full-information estimator (told the target every round), same passes.

Targets are standardised with the training split's mean and standard deviation
(``target_offset`` / ``target_scale``: the tree's leaves hold standardised values and
the played value is ``offset + scale * leaf``); the perturbation ``delta`` is in target
units.  RMSE is reported in the original units.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from banditree.datasets import Dataset, load
from banditree.learners import Learner, build_learner
from simulate.environments import FeedbackMode, RegressionEnvironment, RegressionLoss

#: paper figures: Table 6 (DGT-Bandit two-point) and Table 1 (supervised DGT), RMSE
PAPER = {
    ("abalone", "squared"): (2.16, 2.15),
    ("abalone", "huber"): (2.16, 2.15),
    ("cpu_act", "squared"): (3.05, 2.91),
    ("cpu_act", "huber"): (2.99, 2.91),
}


def train(
    ds: Dataset,
    estimator: FeedbackMode,
    loss: RegressionLoss,
    passes: int,
    seed: int,
    **extra: Any,
) -> Learner:
    config = {
        "kind": "dgt",
        "task": "regression",
        "n_features": ds.n_features,
        "estimator": estimator,
        "regression_loss": loss,
        "target_offset": float(ds.y_train.mean()),
        "target_scale": float(ds.y_train.std()),
        "seed": seed,
        **extra,
    }
    learner = build_learner(config)
    env = RegressionEnvironment(mode=estimator, loss=loss)  # Huber threshold 1
    rng = np.random.default_rng(seed)
    for _ in range(passes):
        for i in rng.permutation(len(ds.y_train)).tolist():
            d = learner.act(ds.X_train[i])
            learner.learn(d, env.feedback(d, float(ds.y_train[i])))
    return learner


def rmse(learner: Learner, ds: Dataset) -> float:
    return float(np.sqrt(np.mean((learner.predict(ds.X_test) - ds.y_test) ** 2)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["abalone", "cpu_act"])
    parser.add_argument("--splits", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--height", type=int, default=6)
    args = parser.parse_args(argv)
    extra = {"learning_rate": args.learning_rate, "height": args.height}
    print(f"test RMSE, mean over splits {args.splits}, {args.passes} passes, {extra}")
    print(
        f"{'dataset':9s} {'loss':8s} {'one-point':>9s} {'two-point':>9s} {'full-info':>9s}"
        f" {'2pt/full':>8s} {'paper 2pt':>9s} {'paper sup':>9s}"
    )
    for name in args.datasets:
        losses: tuple[RegressionLoss, ...] = ("squared", "huber")
        for loss in losses:
            scores: dict[FeedbackMode, list[float]] = {"one_point": [], "two_point": [], "full": []}
            for split in args.splits:
                ds = load(name, split=split)
                for estimator, values in scores.items():
                    learner = train(ds, estimator, loss, args.passes, split, **extra)
                    values.append(rmse(learner, ds))
            one, two, full = (float(np.mean(v)) for v in scores.values())
            paper_two, paper_sup = PAPER[(name, loss)]
            print(
                f"{name:9s} {loss:8s} {one:9.3f} {two:9.3f} {full:9.3f} {two / full:8.3f}"
                f" {paper_two:9.2f} {paper_sup:9.2f}"
            )


if __name__ == "__main__":
    main()
