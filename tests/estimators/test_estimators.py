"""Bandit gradient estimators: unbiasedness on known smooth losses, eq. 8 by autograd.

Tolerances are 4 standard errors computed from the drawn sample itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from banditree.estimators import (
    ClassificationEstimator,
    FullInformationEstimator,
    OnePointEstimator,
    TwoPointEstimator,
)
from banditree.estimators.classification import classification_gradient
from banditree.explore import EpsilonGreedy, event_uniforms, sample_action
from banditree.learners import Decision, Feedback, build_learner

N_DRAWS = 20_000


def smooth_loss(y: float) -> float:
    """A known smooth, non-quadratic loss of the played value."""
    return (y - 1.3) ** 2 + 0.5 * math.sin(3.0 * y)


def smooth_loss_derivative(y: float) -> float:
    return 2.0 * (y - 1.3) + 1.5 * math.cos(3.0 * y)


def assert_mean_within_4_se(samples: np.ndarray, target: float) -> None:
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    assert abs(samples.mean() - target) <= 4.0 * se, (samples.mean(), target, se)


def test_one_point_is_unbiased_for_the_smoothed_derivative() -> None:
    """E_u[l(y + delta u) u / delta] = (l(y + delta) - l(y - delta)) / (2 delta), u from the learner."""
    delta, y_hat = 0.5, 0.4
    learner = build_learner(
        {"kind": "linear", "task": "regression", "n_features": 1, "delta": delta, "seed": 11}
    )
    estimator = OnePointEstimator(delta)
    samples = np.empty(N_DRAWS)
    for i in range(N_DRAWS):
        d = learner.act([0.0], event_id=f"e{i}")
        assert d.perturbation in (-1, 1) and d.value == d.greedy_value + delta * d.perturbation
        played = y_hat + delta * d.perturbation
        samples[i] = estimator.upstream(np.array([y_hat]), d, Feedback(loss=smooth_loss(played)))[0]
    smoothed = (smooth_loss(y_hat + delta) - smooth_loss(y_hat - delta)) / (2 * delta)
    assert_mean_within_4_se(samples, smoothed)
    # the smoothed derivative approaches the true one as delta shrinks (O(delta^2))
    small = 1e-3
    close = (smooth_loss(y_hat + small) - smooth_loss(y_hat - small)) / (2 * small)
    assert abs(close - smooth_loss_derivative(y_hat)) < 1e-5


def test_one_point_with_quadratic_loss_is_unbiased_for_the_exact_derivative() -> None:
    delta, y_hat, target = 0.5, 0.4, 2.0
    rng = np.random.default_rng(2)
    u = np.where(rng.random(N_DRAWS) < 0.5, 1, -1)
    estimator = OnePointEstimator(delta)
    samples = np.array(
        [
            estimator.upstream(
                np.array([y_hat]),
                Decision("e", (0.0,), 0, perturbation=int(ui)),
                Feedback(loss=(y_hat + delta * ui - target) ** 2),
            )[0]
            for ui in u
        ]
    )
    assert_mean_within_4_se(samples, 2.0 * (y_hat - target))


def test_two_point_with_noisy_losses_is_unbiased() -> None:
    delta, y_hat = 0.5, -0.7
    rng = np.random.default_rng(3)
    estimator = TwoPointEstimator(delta)
    decision = Decision("e", (0.0,), 0, value=y_hat, probes=(y_hat + delta, y_hat - delta))
    noise = rng.normal(scale=0.3, size=(N_DRAWS, 2))
    samples = np.array(
        [
            estimator.upstream(
                np.array([y_hat]),
                decision,
                Feedback(
                    losses=(smooth_loss(y_hat + delta) + n[0], smooth_loss(y_hat - delta) + n[1])
                ),
            )[0]
            for n in noise
        ]
    )
    smoothed = (smooth_loss(y_hat + delta) - smooth_loss(y_hat - delta)) / (2 * delta)
    assert_mean_within_4_se(samples, smoothed)
    # noiseless: exactly the symmetric difference
    exact = estimator.upstream(
        np.array([y_hat]),
        decision,
        Feedback(losses=(smooth_loss(y_hat + delta), smooth_loss(y_hat - delta))),
    )[0]
    assert exact == pytest.approx(smoothed, abs=1e-12)


def test_eq8_equals_autograd_of_the_propensity_weighted_squared_error() -> None:
    rng = np.random.default_rng(4)
    for _ in range(50):
        logits = rng.normal(scale=2.0, size=5)
        action = int(rng.integers(5))
        propensity = float(rng.uniform(0.05, 1.0))
        loss = float(rng.integers(2)) if rng.random() < 0.5 else float(rng.random())
        theta = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
        ((torch.sigmoid(theta[action]) - (1.0 - loss)) ** 2 / propensity).backward()
        assert theta.grad is not None
        ours = classification_gradient(logits, action, propensity, loss)
        np.testing.assert_allclose(ours, theta.grad.numpy(), atol=1e-12, rtol=0)


def test_eq8_is_unbiased_for_the_full_information_gradient() -> None:
    """Over the explorer's action draws, eq. 8 averages to the gradient of
    sum_k (sigmoid(theta_k) - reward_k)^2: importance weighting undoes the sampling."""
    logits = np.array([0.3, -1.0, 1.2, -0.2])
    label = 1
    pmf = EpsilonGreedy(0.3)(1.0 / (1.0 + np.exp(-logits)))
    estimator = ClassificationEstimator()
    samples = np.empty((N_DRAWS, logits.size))
    for i in range(N_DRAWS):
        action = sample_action(pmf, event_uniforms(0, f"e{i}")[0])
        d = Decision("e", (0.0,), 0, action=action, propensity=float(pmf[action]))
        samples[i] = estimator.upstream(logits, d, Feedback(loss=float(action != label)))
    full = FullInformationEstimator("classification").upstream(
        logits, Decision("e", (0.0,), 0), Feedback(label=label)
    )
    for k in range(logits.size):
        assert_mean_within_4_se(samples[:, k], float(full[k]))


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_full_information_regression_matches_autograd(loss: str) -> None:
    estimator = FullInformationEstimator("regression", loss, huber_delta=1.0)
    for y_hat, label in [(0.3, 2.0), (2.5, 2.0), (-4.0, 1.0), (1.0, 1.2)]:
        out = torch.tensor([y_hat], dtype=torch.float64, requires_grad=True)
        target = torch.tensor([label], dtype=torch.float64)
        value = (
            ((out - target) ** 2).sum()
            if loss == "squared"
            else torch.nn.functional.huber_loss(out, target, delta=1.0, reduction="sum")
        )
        value.backward()
        assert out.grad is not None
        ours = estimator.upstream(
            np.array([y_hat]), Decision("e", (0.0,), 0), Feedback(label=label)
        )
        np.testing.assert_allclose(ours, out.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("make", [OnePointEstimator, TwoPointEstimator])
@pytest.mark.parametrize("delta", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_delta_is_refused_with_the_bound(make: type, delta: float) -> None:
    with pytest.raises(ValueError, match="delta must be > 0"):
        make(delta)


def test_truncated_importance_weight_caps_only_rare_actions() -> None:
    """With a cap, eq. 8 uses min(1/p, cap): unchanged for likely actions, capped for rare ones."""
    logits = np.array([0.4, -0.7, 1.1])
    capped = ClassificationEstimator(max_importance_weight=3.0)
    for propensity, weight in ((0.8, 1.0 / 0.8), (0.5, 2.0), (0.1, 3.0), (0.01, 3.0)):
        d = Decision("e", (0.0,), 0, action=1, propensity=propensity)
        got = capped.upstream(logits, d, Feedback(loss=1.0))
        # the same gradient as eq. 8 played at propensity 1 / weight
        want = classification_gradient(logits, 1, 1.0 / weight, 1.0)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    exact = ClassificationEstimator()
    d = Decision("e", (0.0,), 0, action=1, propensity=0.01)
    np.testing.assert_allclose(
        exact.upstream(logits, d, Feedback(loss=1.0)),
        classification_gradient(logits, 1, 0.01, 1.0),
        rtol=1e-12,
    )


@pytest.mark.parametrize("cap", [0.5, 0.0, -1.0, float("nan"), float("inf")])
def test_importance_weight_cap_below_one_is_refused(cap: float) -> None:
    with pytest.raises(ValueError, match="max_importance_weight must be >= 1"):
        ClassificationEstimator(max_importance_weight=cap)


def test_learner_config_passes_the_cap_and_null_gives_exact_eq8() -> None:
    from banditree.learners import build_learner

    base = {"kind": "dgt", "n_features": 3, "n_actions": 4}
    default = build_learner(base)
    capped = build_learner({**base, "max_importance_weight": 3.0})
    exact = build_learner({**base, "max_importance_weight": None})
    # the default: weight 1, least squares on the played action's reward (SquareCB's oracle)
    assert default.estimator.max_importance_weight == 1.0  # type: ignore[attr-defined]
    assert capped.estimator.max_importance_weight == 3.0  # type: ignore[attr-defined]
    assert exact.estimator.max_importance_weight is None  # type: ignore[attr-defined]


def test_weight_one_is_plain_least_squares_on_the_played_reward() -> None:
    logits = np.array([0.4, -0.7, 1.1])
    plain = ClassificationEstimator(max_importance_weight=1.0, link="identity")
    for propensity in (0.9, 0.3, 0.01):
        d = Decision("e", (0.0,), 0, action=2, propensity=propensity)
        got = plain.upstream(logits, d, Feedback(loss=0.25))
        np.testing.assert_allclose(got, [0.0, 0.0, 2.0 * (1.1 - 0.75)], rtol=1e-12)
