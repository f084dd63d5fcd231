"""The DGT's per-action linear term: old checkpoints load with it at zero, and it learns."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from banditree.learners import Feedback, Learner, build_learner
from banditree.learners.factory import restore_learner
from tests.learners.test_contract import stream


def _config(kind: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "n_features": 5,
        "n_actions": 3,
        "height": 3,
        "n_trees": 2,
        "accumulate": 2,
        "seed": 4,
        **extra,
    }


def _train(learner: Learner, n: int = 40) -> None:
    x, labels = stream(n, seed=6)
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))


@pytest.mark.parametrize("kind", ["dgt", "dgt_forest"])
def test_checkpoint_without_the_linear_term_loads_with_it_at_zero(kind: str) -> None:
    old = build_learner(_config(kind, linear_term=False))
    _train(old)
    tensors, meta = old.state()
    assert not any(k.endswith("linear") for k in tensors)
    # a checkpoint written before the field existed, restored where the term is on
    config = {k: v for k, v in meta["config"].items() if not k.startswith("linear_")}
    new = restore_learner(tensors, {**meta, "config": config})  # the default: the term is on
    linear = {k: v for k, v in new.parameters().items() if k.endswith("linear")}
    assert linear and all(v.shape == (3, 5) and not v.any() for v in linear.values())
    x, _ = stream(25, seed=8)
    for row in x:  # the same outputs, so the same decisions
        a, b = old.act(row, event_id="e"), new.act(row, event_id="e")
        assert (a.action, a.propensity, a.leaf) == (b.action, b.propensity, b.leaf)
        np.testing.assert_allclose(new.reward_estimates(row), old.reward_estimates(row))
    _train(new)  # and it learns from there
    assert any(v.any() for k, v in new.parameters().items() if k.endswith("linear"))


def test_linear_learning_rate_sets_the_adagrad_steps_of_the_linear_term_and_bias() -> None:
    """AdaGrad's first step moves each weight by its step size; later steps shrink."""
    learner = build_learner(
        _config("dgt", linear_update="adagrad", linear_learning_rate=0.2, learning_rate=0.01)
    )
    params = [learner.parameters()]
    for _ in range(3):
        _train(learner, n=1)  # one update each (the first rounds update at once)
        params.append(learner.parameters())
    steps = [{k: b[k] - a[k] for k in a} for a, b in itertools.pairwise(params)]
    first = steps[0]
    moved = np.abs(first["bias"]) > 0
    assert moved.any()
    np.testing.assert_allclose(np.abs(first["bias"][moved]), 0.2, rtol=1e-6)
    moved = np.abs(first["linear"]) > 0
    np.testing.assert_allclose(np.abs(first["linear"][moved]), 0.2 / np.sqrt(5), rtol=1e-6)
    # the tree's own RMSprop step (torch's first step: lr / sqrt(1 - alpha) = 10 lr)
    assert np.abs(first["theta"]).max() == pytest.approx(0.1, rel=1e-6)
    # a running sum, not an average: a weight's step never grows for the same gradient size
    later = np.abs(steps[2]["bias"])
    assert (later <= 0.2 + 1e-12).all()


def test_regression_and_other_families_keep_no_linear_term_by_default() -> None:
    regression = build_learner({"n_features": 5, "task": "regression"})
    assert "linear" not in regression.parameters()
    tel = build_learner({**_config("tel"), "kind": "tel"})
    assert not any(k.endswith("linear") for k in tel.parameters())
    assert "linear" in build_learner(_config("dgt")).parameters()
