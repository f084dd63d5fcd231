"""Per-action online ridge regression against the batch ridge solution, and in the learner."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.factory import restore_learner
from banditree.learners.ridge import MIX_MEAN_PRIOR, PerActionRidge
from tests.learners.test_contract import N_FEATURES, stream


def batch_ridge(
    x: np.ndarray, r: np.ndarray, l2: float, intercept_l2: float, prior: float
) -> np.ndarray:
    """The slow reference: solve ``(U^T U + P) w = U^T r + P w0`` with ``U = (x, 1)``."""
    u = np.hstack([x, np.ones((len(x), 1))])
    penalty = np.diag([l2] * x.shape[1] + [intercept_l2])
    w0 = np.zeros(u.shape[1])
    w0[-1] = prior
    return np.linalg.solve(u.T @ u + penalty, u.T @ r + penalty @ w0)


def _stream(seed: int, n: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` contexts ``(n, d)`` of mixed scales, the actions played among ``k`` and their
    rewards in ``[0, 1]``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, size=d)
    return x, rng.integers(0, k, size=n), rng.uniform(0.0, 1.0, size=n)


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
    x, actions, rewards = _stream(seed, n, d, 3)
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


def slow_mix(
    x: np.ndarray, actions: np.ndarray, r: np.ndarray, l2: float, prior: float, rate: float
) -> tuple[np.ndarray, np.ndarray]:
    """The slow reference of the mix: each action's first d rounds scored by batch fits of
    its rounds before, the evidence summed over the actions."""
    k, d = 3, x.shape[1]
    evidence = 0.0
    for a in range(k):
        xa, ra = x[actions == a], r[actions == a]
        for i in range(min(len(ra), d)):
            w = batch_ridge(xa[:i], ra[:i], l2, l2, prior)
            mean = (MIX_MEAN_PRIOR * prior + ra[:i].sum()) / (MIX_MEAN_PRIOR + i)
            evidence += (ra[i] - mean) ** 2 - (ra[i] - w[:-1] @ xa[i] - w[-1]) ** 2
    pooled = 1.0 / (1.0 + np.exp(-np.clip(rate * evidence, -50, 50)))
    slopes, intercepts = np.zeros((k, d)), np.zeros(k)
    for a in range(k):
        xa, ra = x[actions == a], r[actions == a]
        w = batch_ridge(xa, ra, l2, l2, prior)
        mean = (MIX_MEAN_PRIOR * prior + ra.sum()) / (MIX_MEAN_PRIOR + len(ra))
        alpha = 1.0 if len(ra) >= d else pooled
        slopes[a] = alpha * w[:-1]
        intercepts[a] = alpha * w[-1] + (1.0 - alpha) * mean
    return slopes, intercepts


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(0, 40),
    d=st.integers(1, 12),
    l2=st.floats(0.1, 50.0),
    prior=st.floats(0.0, 1.0),
    rate=st.floats(0.1, 100.0),
)
def test_served_mix_equals_the_slow_reference(
    seed: int, n: int, d: int, l2: float, prior: float, rate: float
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    actions = rng.integers(0, 3, size=n)
    rewards = rng.integers(0, 2, size=n).astype(float)
    ridge = PerActionRidge(3, d, l2, prior, mix_rate=rate)
    assert ridge.update_rows(x, actions.tolist(), rewards.tolist()) == n
    slopes, intercepts = ridge.served()
    expected = slow_mix(x, actions, rewards, l2, prior, rate)
    np.testing.assert_allclose(slopes, expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(intercepts, expected[1], rtol=1e-6, atol=1e-8)


def test_mix_keeps_the_mean_while_the_slopes_fit_noise_and_the_ridge_once_they_predict() -> None:
    rng = np.random.default_rng(0)
    d, n = 40, 30  # fewer rounds than features
    x = rng.normal(size=(2 * n, d))
    noise = (rng.uniform(size=2 * n) < 0.1).astype(float)  # rewards unrelated to x
    signal = (x[:, 0] > 0).astype(float)  # rewards a function of x
    alternate = [0, 1] * (n // 2)
    on_noise = PerActionRidge(2, d, 10.0, 0.5, mix_rate=10.0)
    on_noise.update_rows(x[:n], alternate, noise[:n].tolist())
    assert (on_noise.mix_weights() < 0.01).all()
    slopes, intercepts = on_noise.served()
    assert np.abs(slopes).max() < 1e-3
    played = noise[:n][0::2]  # action 0's rounds
    mean = (MIX_MEAN_PRIOR * 0.5 + played.sum()) / (MIX_MEAN_PRIOR + len(played))
    assert intercepts[0] == pytest.approx(mean, 1e-3)
    on_signal = PerActionRidge(2, d, 10.0, 0.5, mix_rate=10.0)
    on_signal.update_rows(x[:n], alternate, signal[:n].tolist())
    assert (on_signal.mix_weights() > 0.99).all()
    # pooled: an action with no round of its own takes what the others' rounds say
    fresh = PerActionRidge(3, d, 10.0, 0.5, mix_rate=10.0)
    fresh.update_rows(x[:n], alternate, noise[:n].tolist())
    assert fresh.mix_weights()[2] < 0.01 and fresh.mix_stats[2, 0] == 0
    # d rounds and more: the ridge alone for that action, whatever the evidence
    on_noise.update_rows(x[n:], [0] * n, noise[n:].tolist())
    assert on_noise.mix_weights()[0] == 1.0 and on_noise.mix_weights()[1] < 0.01
    np.testing.assert_array_equal(on_noise.served()[0][0], on_noise.slopes[0])
    off = PerActionRidge(2, d, 10.0, 0.5)  # mix_rate 0: the ridge fit alone
    off.update_rows(x[:n], [0] * n, noise[:n].tolist())
    np.testing.assert_array_equal(off.served()[0], off.slopes)
    with pytest.raises(ValueError, match="mix_rate"):
        PerActionRidge(2, d, mix_rate=-1.0)


def test_a_checkpoint_from_before_the_mix_serves_its_ridge_fit() -> None:
    learner = build_learner(
        {"kind": "dgt", "n_features": N_FEATURES, "n_actions": 3, "height": 3, "seed": 1}
    )
    x, labels = stream(8, seed=3)  # fewer rounds per action than features: the mix is on
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    tensors, meta = learner.state()
    old = {k: v for k, v in tensors.items() if k not in ("ridge.mix_stats", "ridge.prior")}
    ridge = learner._ridge  # type: ignore[attr-defined]
    old["param.linear"], old["param.bias"] = ridge.slopes, ridge.intercepts  # served then
    assert (ridge.mix_stats[:, 0] < N_FEATURES).any()
    copy = restore_learner(old, meta)
    np.testing.assert_array_equal(copy._ridge.served()[0], ridge.slopes)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(copy._ridge.weights, ridge.weights)  # type: ignore[attr-defined]


def test_learner_bias_and_linear_term_are_the_ridge_fit_and_survive_a_checkpoint() -> None:
    config = {"kind": "dgt", "n_features": 5, "n_actions": 3, "height": 3, "accumulate": 2}
    learner = build_learner({**config, "seed": 1, "linear_update": "ridge", "ridge_l2": 5.0})
    x, labels = stream(80, seed=3)
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    params = learner.parameters()
    ridge = learner._ridge  # type: ignore[attr-defined]
    slopes, intercepts = ridge.served()
    np.testing.assert_array_equal(params["linear"], slopes)
    np.testing.assert_array_equal(params["bias"], intercepts)
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
    base = {"kind": "dgt", "n_features": 5, "n_actions": 3}
    default = LearnerConfig(**base)
    assert default.uses_ridge and default.resolved_context_clip == 3.0
    boosted = build_learner({"n_features": 5, "n_actions": 3})  # the default: its tree's
    assert getattr(boosted, "_starter")._ridge is not None  # noqa: B009
    assert not LearnerConfig(**base, reward_link="sigmoid").uses_ridge  # fits the reward itself
    assert not LearnerConfig(**base, max_importance_weight=3.0).uses_ridge  # unweighted fit
    assert LearnerConfig(**base, max_importance_weight=3.0, linear_update="ridge").uses_ridge
    assert not LearnerConfig(**base, mode="apprentice").uses_ridge
    assert not LearnerConfig(**{**base, "kind": "dgt_forest"}).uses_ridge
    big = {"kind": "dgt", "n_features": 2000, "n_actions": 3}  # a ridge of 3 x 2001^2
    assert not LearnerConfig(**big).uses_ridge
    assert "linear" in build_learner(big).parameters()  # the AdaGrad linear term instead
    regression = LearnerConfig(n_features=5, task="regression")
    assert not regression.uses_ridge and regression.resolved_context_clip is None
    assert LearnerConfig(**base, standardize=False).resolved_context_clip is None
    assert LearnerConfig(**base, context_clip=0.0).resolved_context_clip is None
    assert LearnerConfig(**base, context_clip=5.0).resolved_context_clip == 5.0


def test_contexts_are_clipped_after_standardisation_for_decisions_and_learning() -> None:
    learner = build_learner(
        {"kind": "dgt", "n_features": 5, "n_actions": 3, "height": 3, "seed": 2}
    )
    x, labels = stream(60, seed=4)
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    snap = learner._snapshot  # type: ignore[attr-defined]
    edge = snap.mean + 3.001 / snap.inv_scale  # just past three standard deviations
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
        {"kind": "dgt", "n_features": 5, "n_actions": 3, "height": 3, "seed": 2, "context_clip": 0}
    )
    for row, label in zip(x, labels.tolist(), strict=True):
        d = unclipped.act(row)
        unclipped.learn(d, Feedback(loss=float(d.action != label)))
    assert not np.array_equal(unclipped.reward_estimates(far), unclipped.reward_estimates(edge))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(0, 80),
    d=st.integers(1, 6),
    defer=st.integers(1, 9),
)
def test_deferred_ridge_is_the_same_exact_solution(seed: int, n: int, d: int, defer: int) -> None:
    """The rank-one changes kept apart (``defer``) and folded later give, round by round,
    the eager update's weights and inverse (other roundings), so the batch solution."""
    x, played_actions, played_rewards = _stream(seed, n, d, 2)
    actions, rewards = played_actions.tolist(), played_rewards.tolist()
    eager = PerActionRidge(2, d, 2.0, 0.5)
    deferred = PerActionRidge(2, d, 2.0, 0.5, defer=defer)
    for row, a, r in zip(x, actions, rewards, strict=True):
        assert eager.update(row, a, r) and deferred.update(row, a, r)
        np.testing.assert_allclose(deferred.weights, eager.weights, rtol=1e-9, atol=1e-12)
    for a in range(2):
        assert deferred.pending_rounds[a] == actions.count(a) % defer
        np.testing.assert_allclose(deferred.inverse(a), eager.inv_gram[a], rtol=1e-9, atol=1e-12)
        played = np.array(actions, dtype=int) == a
        expected = batch_ridge(x[played], np.array(rewards)[played], 2.0, 2.0, 0.5)
        np.testing.assert_allclose(deferred.weights[a], expected, rtol=1e-6, atol=1e-8)
    assert np.array_equal(deferred.inverse(0), deferred.inverse(0).T)  # S^T S is symmetric


def test_deferred_ridge_refuses_a_non_finite_row_whole() -> None:
    ridge = PerActionRidge(1, 2, defer=3)
    assert ridge.update(np.array([1.0, 2.0]), 0, 1.0)
    before = (ridge.weights.copy(), ridge.pending.copy(), ridge.pending_rounds.copy())
    assert not ridge.update(np.array([np.nan, 1.0]), 0, 1.0)
    for now, then in zip((ridge.weights, ridge.pending, ridge.pending_rounds), before, strict=True):
        np.testing.assert_array_equal(now, then)
    with pytest.raises(ValueError, match="defer"):
        PerActionRidge(1, 2, defer=-1)
