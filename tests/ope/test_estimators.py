"""IPS, SNIPS and DR on a synthetic log whose true policy value is known analytically."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from banditree.ope import (
    DoublyRobust,
    InverseProbabilityWeighting,
    LoggedRounds,
    OffPolicyEstimator,
    SelfNormalizedInverseProbabilityWeighting,
    check_logged_rounds,
)

N_TYPES, K = 5, 4


def problem(seed: int = 0) -> dict[str, np.ndarray]:
    """Context types with known probabilities, mean rewards, logging and target policies."""
    rng = np.random.default_rng(seed)
    p_type = rng.dirichlet(np.ones(N_TYPES))
    mean_reward = rng.uniform(0.05, 0.95, size=(N_TYPES, K))
    logits = rng.normal(size=(N_TYPES, K))
    logging = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    target = 0.1 / K + 0.9 * np.eye(K)[rng.integers(0, K, N_TYPES)]  # epsilon-greedy, 0.1
    return {"p_type": p_type, "mean": mean_reward, "logging": logging, "target": target}


def true_value(pb: dict[str, np.ndarray]) -> float:
    """``V(pi) = sum_x P(x) sum_a pi(a|x) mu(x, a)``."""
    return float(pb["p_type"] @ (pb["target"] * pb["mean"]).sum(axis=1))


def sample_log(pb: dict[str, np.ndarray], n: int, seed: int, model_bias: float) -> LoggedRounds:
    rng = np.random.default_rng(seed)
    types = rng.choice(N_TYPES, size=n, p=pb["p_type"])
    u = rng.random(n)[:, None]
    action = (u > np.cumsum(pb["logging"][types], axis=1)).sum(axis=1).clip(0, K - 1)
    reward = (rng.random(n) < pb["mean"][types, action]).astype(np.float64)
    return check_logged_rounds(
        reward=reward,
        action=action,
        propensity=pb["logging"][types, action],
        action_dist=pb["target"][types],
        estimated_rewards=np.clip(pb["mean"][types] + model_bias, 0, 1),  # a biased reward model
    )


ESTIMATORS: list[OffPolicyEstimator] = [
    InverseProbabilityWeighting(),
    SelfNormalizedInverseProbabilityWeighting(),
    DoublyRobust(),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.name)
def test_interval_holds_the_true_value(estimator: OffPolicyEstimator) -> None:
    pb = problem()
    log = sample_log(pb, 20_000, seed=1, model_bias=0.15)
    truth = true_value(pb)
    low, high = estimator.estimate_interval(log, n_bootstrap=300)
    assert low <= truth <= high
    assert low <= estimator.estimate(log) <= high
    assert high - low < 0.05  # an informative interval, not a trivially wide one


def test_estimates_are_close_and_intervals_cover_across_replicates() -> None:
    pb = problem(3)
    truth = true_value(pb)
    hits = {e.name: 0 for e in ESTIMATORS}
    errors = {e.name: [] for e in ESTIMATORS}
    replicates = 30
    for r in range(replicates):
        log = sample_log(pb, 1500, seed=100 + r, model_bias=-0.1)
        for e in ESTIMATORS:
            low, high = e.estimate_interval(log, n_bootstrap=200, seed=r)
            hits[e.name] += int(low <= truth <= high)
            errors[e.name].append(e.estimate(log) - truth)
    for e in ESTIMATORS:
        assert hits[e.name] >= 0.8 * replicates, (e.name, hits[e.name])
        assert abs(np.mean(errors[e.name])) < 0.02, e.name  # (nearly) unbiased


def test_dr_with_an_exact_reward_model_beats_ips_variance() -> None:
    pb = problem(5)
    log = sample_log(pb, 3000, seed=2, model_bias=0.0)
    ips_low, ips_high = InverseProbabilityWeighting().estimate_interval(log, n_bootstrap=200)
    dr_low, dr_high = DoublyRobust().estimate_interval(log, n_bootstrap=200)
    assert dr_high - dr_low < ips_high - ips_low


def _valid() -> dict[str, Any]:
    return {
        "reward": np.array([1.0, 0.0, 1.0]),
        "action": np.array([0, 1, 1]),
        "propensity": np.array([0.5, 0.5, 0.25]),
        "action_dist": np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]),
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("reward", np.array([]), "reward must be a non-empty 1-d array, got shape (0,)"),
        ("reward", np.array([1.0, np.nan, 0.0]), "reward must be finite"),
        ("action", np.array([0, 1]), "action must have shape (3,) like reward, got (2,)"),
        ("action", np.array([0, 2, 1]), "action must be in [0, 1] (action_dist has 2 columns)"),
        ("action", np.array([0, 0.5, 1]), "action must hold integer action indices"),
        ("propensity", np.array([0.5, 0.0, 0.5]), "propensity must be in (0, 1]"),
        ("propensity", np.array([0.5, 1.5, 0.5]), "propensity must be in (0, 1]"),
        ("action_dist", np.ones((3, 2)), "action_dist rows must be probabilities summing to 1"),
        ("action_dist", np.ones(3), "action_dist must have shape (3, n_actions), got (3,)"),
        (
            "estimated_rewards",
            np.ones((3, 3)),
            "estimated_rewards must have shape (3, 2) like action_dist, got (3, 3)",
        ),
    ],
)
def test_invalid_logs_are_refused_with_the_exact_message(
    field: str, value: Any, message: str
) -> None:
    arrays = _valid() | {field: value}
    with pytest.raises(ValueError) as err:
        check_logged_rounds(**arrays)
    assert str(err.value) == message


def test_dr_without_a_reward_model_is_refused() -> None:
    with pytest.raises(ValueError, match="dr needs estimated_rewards"):
        DoublyRobust().estimate(check_logged_rounds(**_valid()))


def test_matches_open_bandit_pipeline() -> None:
    """Cross-check against obp (Open Bandit Pipeline) on the same log, when it installs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obp_ope = pytest.importorskip("obp.ope", reason="obp is not installed")
    pb = problem(7)
    log = sample_log(pb, 4000, seed=3, model_bias=0.05)
    assert log.estimated_rewards is not None
    kwargs = {
        "reward": log.reward,
        "action": log.action,
        "pscore": log.propensity,
        "action_dist": log.action_dist[:, :, None],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ips = obp_ope.InverseProbabilityWeighting().estimate_policy_value(**kwargs)
        snips = obp_ope.SelfNormalizedInverseProbabilityWeighting().estimate_policy_value(**kwargs)
        dr = obp_ope.DoublyRobust().estimate_policy_value(
            **kwargs, estimated_rewards_by_reg_model=log.estimated_rewards[:, :, None]
        )
    assert InverseProbabilityWeighting().estimate(log) == pytest.approx(ips, rel=1e-9)
    assert SelfNormalizedInverseProbabilityWeighting().estimate(log) == pytest.approx(
        snips, rel=1e-9
    )
    assert DoublyRobust().estimate(log) == pytest.approx(dr, rel=1e-9)
