"""The default learner on real data: it must earn more than guessing and than any constant."""

from __future__ import annotations

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner


def progressive_losses(config: dict[str, object], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    learner = build_learner(config)
    losses = np.empty(len(y))
    for i, (row, label) in enumerate(zip(x, y.tolist(), strict=True)):
        d = learner.act(row)
        losses[i] = float(d.action != label)
        learner.learn(d, Feedback(loss=losses[i]))
    return losses


def test_default_beats_uniform_random_and_the_best_constant_on_nursery() -> None:
    ds = load("nursery")
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:3000]
    x, y = ds.X_train[order], ds.y_train[order]
    base = {"n_features": ds.n_features, "n_actions": ds.n_classes, "seed": 0}
    ours = progressive_losses(base, x, y)
    random = progressive_losses({**base, "kind": "random"}, x, y)
    for n in (2000, 3000):  # the whole stream and its first 2,000 rounds
        best_constant = 1.0 - np.bincount(y[:n]).max() / n
        assert ours[:n].mean() < best_constant - 0.1, (n, ours[:n].mean(), best_constant)
        assert ours[:n].mean() < random[:n].mean() - 0.1
