"""Per-action online ridge regression against the batch ridge solution, and in the learner."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.factory import restore_learner
from banditree.learners.ridge import PerActionRidge
from tests.learners.test_contract import stream


def batch_ridge(
    x: np.ndarray, r: np.ndarray, l2: float, intercept_l2: float, prior: float
) -> np.ndarray:
    """The slow reference: solve ``(U^T U + P) w = U^T r + P w0`` with ``U = (x, 1)``."""
    u = np.hstack([x, np.ones((len(x), 1))])
    penalty = np.diag([l2] * x.shape[1] + [intercept_l2])
    w0 = np.zeros(u.shape[1])
    w0[-1] = prior
    return np.linalg.solve(u.T @ u + penalty, u.T @ r + penalty @ w0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(0, 60),
    d=st.integers(1, 6),
    l2=st.floats(0.1, 50.0),
    intercept_l2=st.floats(0.1, 50.0),
    prior=st.floats(0.0, 1.0),
)
def test_online_ridge_equals_the_batch_solution_per_action(
    seed: int, n: int, d: int, l2: float, intercept_l2: float, prior: float
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, size=d)
    actions = rng.integers(0, 3, size=n)
    rewards = rng.uniform(0.0, 1.0, size=n)
    ridge = PerActionRidge(3, d, l2, prior, intercept_l2)
    for row, a, r in zip(x, actions.tolist(), rewards.tolist(), strict=True):
        assert ridge.update(row, a, r)
    for a in range(3):
        played = actions == a
        expected = batch_ridge(x[played], rewards[played], l2, intercept_l2, prior)
        np.testing.assert_allclose(ridge.weights[a], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ridge.slopes, ridge.weights[:, :-1])
    np.testing.assert_allclose(ridge.intercepts, ridge.weights[:, -1])


def test_absurd_contexts_never_leave_non_finite_weights() -> None:
    ridge = PerActionRidge(2, 2)
    for x in ([1e200, 1.0], [1e300, -1e300], [1e-300, 1e308]):
        ridge.update(np.array(x), 0, 1.0)
        assert np.isfinite(ridge.weights).all() and np.isfinite(ridge.inv_gram).all()
    before = (ridge.weights.copy(), ridge.inv_gram.copy())
    assert not ridge.update(np.array([np.nan, 1.0]), 1, 1.0)  # refused whole
    np.testing.assert_array_equal(ridge.weights, before[0])
    np.testing.assert_array_equal(ridge.inv_gram, before[1])


@pytest.mark.parametrize("l2", [0.0, -1.0, float("nan")])
def test_penalty_must_be_positive(l2: float) -> None:
    with pytest.raises(ValueError, match="l2 must be > 0"):
        PerActionRidge(2, 3, l2)


def test_learner_bias_and_linear_term_are_the_ridge_fit_and_survive_a_checkpoint() -> None:
    config = {"n_features": 5, "n_actions": 3, "height": 3, "accumulate": 2, "seed": 1}
    learner = build_learner({**config, "linear_update": "ridge", "ridge_l2": 5.0})
    x, labels = stream(80, seed=3)
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    params = learner.parameters()
    ridge = learner._ridge  # type: ignore[attr-defined]
    np.testing.assert_array_equal(params["linear"], ridge.slopes)
    np.testing.assert_array_equal(params["bias"], ridge.intercepts)
    assert params["linear"].any()
    tensors, meta = learner.state()
    copy = restore_learner(tensors, meta)
    for row in x[:10]:
        np.testing.assert_array_equal(copy.reward_estimates(row), learner.reward_estimates(row))
    row, label = x[0], int(labels[0])
    for model in (learner, copy):  # the same next update
        d = model.act(row, event_id="e")
        model.learn(d, Feedback(loss=float(d.action != label)))
        model.learn(d, Feedback(loss=float(d.action != label)))
    np.testing.assert_array_equal(copy.parameters()["linear"], learner.parameters()["linear"])


def test_ridge_and_the_clip_are_the_classification_defaults_where_they_fit() -> None:
    base = {"n_features": 5, "n_actions": 3}
    default = LearnerConfig(**base)
    assert default.uses_ridge and default.resolved_context_clip == 3.0
    assert not LearnerConfig(**base, reward_link="sigmoid").uses_ridge  # fits the reward itself
    assert not LearnerConfig(**base, max_importance_weight=3.0).uses_ridge  # unweighted fit
    assert LearnerConfig(**base, max_importance_weight=3.0, linear_update="ridge").uses_ridge
    assert not LearnerConfig(**base, mode="apprentice").uses_ridge
    assert not LearnerConfig(**base, kind="dgt_forest").uses_ridge
    big = {"n_features": 2000, "n_actions": 3}  # a ridge state of 3 x 2001^2 numbers
    assert not LearnerConfig(**big).uses_ridge
    assert "linear" in build_learner(big).parameters()  # the AdaGrad linear term instead
    regression = LearnerConfig(n_features=5, task="regression")
    assert not regression.uses_ridge and regression.resolved_context_clip is None
    assert LearnerConfig(**base, standardize=False).resolved_context_clip is None
    assert LearnerConfig(**base, context_clip=0.0).resolved_context_clip is None
    assert LearnerConfig(**base, context_clip=5.0).resolved_context_clip == 5.0


def test_contexts_are_clipped_after_standardisation_for_decisions_and_learning() -> None:
    learner = build_learner({"n_features": 5, "n_actions": 3, "height": 3, "seed": 2})
    x, labels = stream(60, seed=4)
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    snap = learner._snapshot  # type: ignore[attr-defined]
    edge = snap.mean + 3.0 / snap.inv_scale  # three standard deviations above the mean
    far = snap.mean + 50.0 / snap.inv_scale
    np.testing.assert_array_equal(learner.reward_estimates(far), learner.reward_estimates(edge))
    a, b = learner.act(far, event_id="e"), learner.act(edge, event_id="e")
    assert (a.action, a.propensity, a.greedy_action, a.leaf) == (
        b.action,
        b.propensity,
        b.greedy_action,
        b.leaf,
    )
    np.testing.assert_array_equal(learner.predict(far[None]), learner.predict(edge[None]))
    unclipped = build_learner(
        {"n_features": 5, "n_actions": 3, "height": 3, "seed": 2, "context_clip": 0}
    )
    for row, label in zip(x, labels.tolist(), strict=True):
        d = unclipped.act(row)
        unclipped.learn(d, Feedback(loss=float(d.action != label)))
    assert not np.array_equal(unclipped.reward_estimates(far), unclipped.reward_estimates(edge))
