"""The importance-weight-aware update against a slow reference: many tiny steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.estimators import ClassificationEstimator
from banditree.estimators.classification import classification_gradient, importance_weight
from banditree.learners import Decision, Feedback


def many_small_steps(output: float, reward: float, weight: float, rate: float) -> float:
    """Gradient descent on ``(o - reward)^2`` at ``rate``, ``weight`` spread over 20,000 steps."""
    n = 20_000
    step = rate * weight / n
    o = output
    for _ in range(n):
        o -= step * 2.0 * (o - reward)
    return o


@pytest.mark.parametrize("cap", [3.0, 10.0])
@pytest.mark.parametrize("propensity", [0.9, 0.3, 0.05, 0.002])
def test_aware_update_is_the_limit_of_many_small_steps(cap: float, propensity: float) -> None:
    """At rate 1 / (2 cap) the aware gradient moves the output exactly as the
    importance weight 1/p spread over infinitesimal steps would."""
    rate = 1.0 / (2.0 * cap)
    for output, loss in ((0.1, 0.0), (0.8, 1.0), (0.45, 0.0), (-0.2, 1.0)):
        g = classification_gradient(
            np.array([0.0, output]), 1, propensity, loss, cap, "identity", importance_aware=True
        )
        stepped = output - rate * g[1]
        slow = many_small_steps(output, 1.0 - loss, 1.0 / propensity, rate)
        assert stepped == pytest.approx(slow, abs=1e-4)


@settings(max_examples=200, deadline=None)
@given(
    output=st.floats(-2.0, 3.0),
    loss=st.floats(0.0, 1.0),
    propensity=st.floats(1e-6, 1.0),
    cap=st.floats(1.0, 100.0),
)
def test_aware_update_never_overshoots_and_is_bounded(
    output: float, loss: float, propensity: float, cap: float
) -> None:
    reward = 1.0 - loss
    g = classification_gradient(
        np.array([output]), 0, propensity, loss, cap, "identity", importance_aware=True
    )[0]
    stepped = output - g / (2.0 * cap)
    low, high = min(output, reward), max(output, reward)
    assert low - 1e-12 <= stepped <= high + 1e-12
    weight = importance_weight(1.0 / propensity, cap, aware=True)
    assert 0.0 < weight <= min(1.0 / propensity, cap) + 1e-12


def test_aware_weight_is_first_order_exact_and_saturates() -> None:
    assert importance_weight(1e-3, 3.0, aware=True) == pytest.approx(1e-3, rel=1e-3)
    assert importance_weight(1e4, 3.0, aware=True) == pytest.approx(3.0)
    assert importance_weight(1e4, 3.0) == 3.0  # truncation
    assert importance_weight(1e4, None, aware=True) == 1e4  # no cap: exact eq. 8


def test_estimator_applies_the_aware_weight() -> None:
    estimator = ClassificationEstimator(3.0, "identity", importance_aware=True)
    d = Decision("e", (0.0,), 0, action=2, propensity=0.1)
    g = estimator.upstream(np.array([0.2, 0.2, 0.4]), d, Feedback(loss=0.0))
    assert g[2] == pytest.approx(2.0 * 3.0 * -np.expm1(-10.0 / 3.0) * (0.4 - 1.0))
    assert g[0] == g[1] == 0.0
