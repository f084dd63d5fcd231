"""After a change signal: fresh ridges challenge the served one (drift_challenger)."""

from __future__ import annotations

import numpy as np

from banditree.datasets import load
from banditree.learners import LearnerConfig, build_learner
from banditree.learners.factory import restore_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.ridge import PerActionRidge
from banditree.learners.ridge_challenger import PHASE, RidgeChallenger
from simulate.drift import drift_labels
from tests.learners.test_drift import _play, _shifted_stream


def _world(rng: np.random.Generator, n: int, share_new: np.ndarray) -> tuple[np.ndarray, ...]:
    """Two actions, reward ``x . w`` of the old world (action 0 pays when ``x0 > 0``)
    or of the new one (swapped), the new one on each round with ``share_new``."""
    x = rng.normal(size=(n, 2))
    actions = rng.integers(0, 2, size=n)
    new = rng.random(n) < share_new
    good = np.where(new, x[:, 0] <= 0, x[:, 0] > 0)
    rewards = np.where(actions == 0, good, ~good).astype(float)
    return x, actions, rewards


def _restarted_ridge() -> tuple[PerActionRidge, RidgeChallenger]:
    ridge = PerActionRidge(2, 2, prior=0.5)
    challenge = RidgeChallenger(ridge, 1000)
    challenge.start(ridge)  # a signal: the ridge restarted, the phase begins
    return ridge, challenge


def test_after_an_abrupt_change_the_restarted_ridge_keeps_its_place() -> None:
    rng = np.random.default_rng(0)
    ridge, challenge = _restarted_ridge()
    x, actions, rewards = _world(rng, PHASE * 1000 + 500, np.ones(PHASE * 1000 + 500))
    twin = PerActionRidge(2, 2, prior=0.5)
    assert challenge.update_rows(ridge, x, actions, rewards.tolist()) == len(x)
    twin.update_rows(x, actions.tolist(), rewards.tolist())
    assert challenge.promotions == 0 and challenge.left == 0
    np.testing.assert_allclose(ridge.weights, twin.weights)  # the plain ridge's fit


def test_while_a_gradual_change_goes_on_a_recent_ridge_takes_over() -> None:
    rng = np.random.default_rng(1)
    ridge, challenge = _restarted_ridge()
    n = 6000
    share = np.clip(np.arange(n) / 4000, 0.0, 1.0)  # the new world's share rising
    x, actions, rewards = _world(rng, n, share)
    stale = PerActionRidge(2, 2, prior=0.5)
    challenge.update_rows(ridge, x, actions, rewards.tolist())
    stale.update_rows(x, actions.tolist(), rewards.tolist())
    assert challenge.promotions >= 1
    # the new world pays action 0 when x0 <= 0: the served slope on x0 has turned
    # negative, and far more than the slope of the ridge that kept every round
    assert ridge.weights[0, 0] < 0.0
    assert ridge.weights[0, 0] < 2.0 * stale.weights[0, 0]


def test_no_signal_no_challenge() -> None:
    ridge = PerActionRidge(2, 2, prior=0.5)
    challenge = RidgeChallenger(ridge, 1000)
    x, actions, rewards = _world(np.random.default_rng(2), 3000, np.zeros(3000))
    challenge.update_rows(ridge, x, actions, rewards.tolist())
    assert challenge.age == 0 and challenge.promotions == 0


def test_a_learner_follows_a_gradual_change_faster_with_the_challenger() -> None:
    """SatImage, the new map's share rising over 1,500 rounds from round 3,000: the
    challenger-served ridge has the lower loss once the change is complete."""
    at, n = 3000, 6500
    ds = load("satimage")
    order = np.random.default_rng(0).permutation(len(ds.y_train))
    order = np.concatenate([order, order])[:n]
    x = ds.X_train[order]
    y = drift_labels(ds.y_train[order], ds.n_classes, "gradual", at, 0)
    base = {"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes}
    default = build_learner(base)
    off = build_learner({**base, "drift_challenger": 0})
    assert isinstance(default, GradientBandit) and isinstance(off, GradientBandit)
    assert default._challenger is not None and off._challenger is None
    losses, losses_off = _play(default, x, y), _play(off, x, y)
    np.testing.assert_array_equal(losses[:at], losses_off[:at])  # nothing before a signal
    assert default._challenger.promotions >= 1
    after = slice(at + at // 2, n)  # the new map only
    assert losses[after].mean() < losses_off[after].mean()


def test_a_checkpoint_in_the_phase_resumes_the_same_challenge() -> None:
    x, y = _shifted_stream(4000, 1500)
    config = {"kind": "dgt", "n_features": 2, "n_actions": 3, "seed": 2}
    whole, first = build_learner(config), build_learner(config)
    assert isinstance(whole, GradientBandit)
    whole_losses = _play(whole, x, y)
    first_losses = _play(first, x[:2600], y[:2600])
    resumed = restore_learner(*first.state())
    assert isinstance(resumed, GradientBandit) and resumed._challenger is not None
    assert resumed._challenger.left > 0  # restored in the middle of the phase
    rest = _play(resumed, x[2600:], y[2600:])
    np.testing.assert_array_equal(np.concatenate([first_losses, rest]), whole_losses)
    assert whole._challenger is not None
    np.testing.assert_array_equal(resumed._ridge.weights, whole._ridge.weights)  # type: ignore[union-attr]


def test_stored_configs_run_without_the_challenger() -> None:
    config = LearnerConfig.model_validate({"kind": "dgt", "n_features": 2, "n_actions": 3})
    assert config.resolved_drift_challenger == 1000
    stored = {k: v for k, v in config.model_dump(mode="json").items() if k != "drift_challenger"}
    old = build_learner(LearnerConfig.from_stored(stored))
    assert isinstance(old, GradientBandit) and old._challenger is None
    off = build_learner({"kind": "dgt", "n_features": 2, "n_actions": 3, "drift_threshold": 0})
    assert isinstance(off, GradientBandit) and off._challenger is None  # needs the detector
