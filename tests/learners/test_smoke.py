"""A DGT-Bandit stream on real data learns well above uniform random."""

from __future__ import annotations

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner


def progressive_accuracy(kind: str, n: int = 4000) -> float:
    ds = load("pendigits")
    learner = build_learner(
        {
            "kind": kind,
            "n_features": ds.n_features,
            "n_actions": ds.n_classes,
            "learning_rate": 1e-2,
        }
    )
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:n]
    correct = 0.0
    for i in order:
        d = learner.act(ds.X_train[i])
        loss = float(d.action != ds.y_train[i])
        learner.learn(d, Feedback(loss=loss))
        correct += 1.0 - loss
    return correct / n


def test_dgt_bandit_beats_uniform_random() -> None:
    dgt = progressive_accuracy("dgt")
    rnd = progressive_accuracy("random")
    assert rnd < 0.15
    assert dgt > 2.5 * rnd
