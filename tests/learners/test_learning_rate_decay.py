"""The step's decay ``learning_rate / (1 + t / T)``: on for regression by default, off for
classification, applied at every update and carried through a checkpoint."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.factory import restore_learner
from banditree.learners.gradient_bandit import GradientBandit


def _regression(**extra: Any) -> dict[str, Any]:
    return {
        "task": "regression",
        "n_features": 4,
        "height": 3,
        "estimator": "two_point",
        "accumulate": 2,
        "seed": 3,
        **extra,
    }


def _feed(learner: GradientBandit, rows: np.ndarray, targets: np.ndarray) -> None:
    for x, y in zip(rows, targets.tolist(), strict=True):
        d = learner.act(x)
        assert d.probes is not None
        learner.learn(d, Feedback(losses=[(p - y) ** 2 for p in d.probes]))


def _data(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    return x, np.where(x[:, 0] > 0, 2.0, -1.0) + 0.5 * x[:, 1]


def test_defaults_decay_regression_only() -> None:
    assert LearnerConfig(**_regression()).resolved_learning_rate_decay == 20_000
    assert LearnerConfig(**_regression(learning_rate_decay=0)).resolved_learning_rate_decay is None
    assert LearnerConfig(**_regression(learning_rate_decay=50)).resolved_learning_rate_decay == 50
    classification = LearnerConfig(n_features=4, n_actions=3)
    assert classification.resolved_learning_rate_decay is None
    with pytest.raises(ValidationError):
        LearnerConfig(**_regression(learning_rate_decay=-1))


def test_each_update_steps_the_decayed_rate() -> None:
    """With T = 2 the update after t rounds equals a constant step of lr / (1 + t / 2)."""
    x, y = _data(6)
    decayed = build_learner(_regression(learning_rate=1e-2, learning_rate_decay=2))
    assert isinstance(decayed, GradientBandit)
    _feed(decayed, x[:1], y[:1])  # the first rounds update at once: t = 1, lr / 1.5
    constant = build_learner(_regression(learning_rate=1e-2 / 1.5, learning_rate_decay=0))
    assert isinstance(constant, GradientBandit)
    _feed(constant, x[:1], y[:1])
    for name, value in constant.parameters().items():
        np.testing.assert_allclose(decayed.parameters()[name], value, rtol=1e-12, atol=1e-15)
    before = {k: v.copy() for k, v in decayed.parameters().items()}
    _feed(decayed, x[1:3], y[1:3])  # the update at t = 3: lr / 2.5
    assert decayed._optimizer.lr == pytest.approx(1e-2 / 2.5)
    assert any(not np.array_equal(before[k], v) for k, v in decayed.parameters().items())


def test_constant_step_when_off() -> None:
    x, y = _data(8)
    learner = build_learner(_regression(learning_rate=1e-2, learning_rate_decay=0))
    assert isinstance(learner, GradientBandit)
    _feed(learner, x, y)
    assert learner._optimizer.lr == 1e-2


def test_checkpoint_resumes_the_schedule() -> None:
    """A learner restored mid-stream steps the same rates as one never interrupted."""
    x, y = _data(40)
    whole = build_learner(_regression(learning_rate_decay=5))
    assert isinstance(whole, GradientBandit)
    _feed(whole, x, y)
    first = build_learner(_regression(learning_rate_decay=5))
    assert isinstance(first, GradientBandit)
    _feed(first, x[:20], y[:20])
    resumed = restore_learner(*first.state())
    assert isinstance(resumed, GradientBandit)
    _feed(resumed, x[20:], y[20:])
    assert resumed._optimizer.lr == pytest.approx(whole._optimizer.lr)
    for name, value in whole.parameters().items():
        np.testing.assert_allclose(resumed.parameters()[name], value, rtol=1e-9, atol=1e-12)


def test_checkpoint_from_before_the_decay_keeps_a_constant_step() -> None:
    """A stored config without the field (saved before it existed) restores with a
    constant step, not the default decay counted from every round it has learned; a
    stored null keeps the default."""
    x, y = _data(40)
    old = build_learner(_regression(learning_rate=1e-2, learning_rate_decay=0))
    assert isinstance(old, GradientBandit)
    _feed(old, x[:20], y[:20])
    tensors, meta = old.state()
    legacy = {k: v for k, v in meta["config"].items() if k != "learning_rate_decay"}
    restored = restore_learner(tensors, {**meta, "config": legacy})
    assert isinstance(restored, GradientBandit)
    assert restored.config()["learning_rate_decay"] == 0.0
    _feed(restored, x[20:], y[20:])
    assert restored._optimizer.lr == 1e-2
    assert LearnerConfig.from_stored(legacy).resolved_learning_rate_decay is None
    current = {**legacy, "learning_rate_decay": None}
    assert LearnerConfig.from_stored(current).resolved_learning_rate_decay == 20_000
