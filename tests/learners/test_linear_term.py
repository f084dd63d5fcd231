"""The DGT's per-action linear term: old checkpoints load with it at zero, and it learns."""

from __future__ import annotations

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
    config = {k: v for k, v in meta["config"].items() if k not in ("linear_term", "linear_lr_scale")}
    new = restore_learner(tensors, {**meta, "config": {**config, "linear_term": True}})
    linear = {k: v for k, v in new.parameters().items() if k.endswith("linear")}
    assert linear and all(v.shape == (3, 5) and not v.any() for v in linear.values())
    x, _ = stream(25, seed=8)
    for row in x:  # the same outputs, so the same decisions
        a, b = old.act(row, event_id="e"), new.act(row, event_id="e")
        assert (a.action, a.propensity, a.leaf) == (b.action, b.propensity, b.leaf)
        np.testing.assert_allclose(new.reward_estimates(row), old.reward_estimates(row))
    _train(new)  # and it learns from there
    assert any(v.any() for k, v in new.parameters().items() if k.endswith("linear"))


def test_linear_lr_scale_scales_the_first_step_of_the_linear_term_and_bias() -> None:
    steps = {}
    for scale in (1.0, 4.0):
        learner = build_learner(_config("dgt", linear_term=True, linear_lr_scale=scale))
        before = learner.parameters()
        _train(learner, n=2)  # one update (accumulate 2)
        after = learner.parameters()
        steps[scale] = {k: after[k] - before[k] for k in before}
    for name in ("linear", "bias"):
        assert np.abs(steps[1.0][name]).max() > 0
        np.testing.assert_allclose(steps[4.0][name], 4.0 * steps[1.0][name], rtol=1e-9)
    np.testing.assert_allclose(steps[4.0]["theta"], steps[1.0]["theta"], rtol=1e-9)
