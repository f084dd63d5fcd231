"""TEUCB / TETS: the refit schedule, the leaf variance, and learning a simple world."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.learners import Feedback
from simulate.tree_ensemble import (
    TreeEnsembleAgent,
    TreeEnsembleBandit,
    ensemble_variance,
    is_refit_round,
    leaf_statistics,
)

pytest.importorskip("lightgbm")


def test_refits_at_100_times_1_1_to_the_k() -> None:
    rounds = [n for n in range(1, 300) if is_refit_round(n)]
    # ceil(100 * 1.1^k): 100, 110, 121, 133.1, 146.41, 161.05, 177.16, 194.87, 214.36, ...
    assert rounds == [100, 110, 121, 134, 147, 162, 178, 195, 215, 236, 260, 286]
    doubling = [n for n in range(1, 100) if is_refit_round(n, first_fit=10, growth=2.0)]
    assert doubling == [10, 20, 40, 80]


def test_leaf_statistics_and_the_ensemble_variance_by_hand() -> None:
    # two trees over five rows; tree 0 puts rows 0-2 in leaf 0 and rows 3-4 in leaf 1,
    # tree 1 puts rows 0 and 3 in leaf 1, the rest in leaf 0
    leaves = np.array([[0, 1], [0, 0], [0, 0], [1, 1], [1, 0]])
    rewards = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    counts, variances = leaf_statistics(leaves, rewards, n_leaves=2)
    assert counts.tolist() == [[3, 2], [3, 2]]
    # tree 0: {1, 0, 1} sample variance 1/3, {0, 0} 0; tree 1: {0, 1, 0} 1/3, {1, 0} 1/2
    np.testing.assert_allclose(variances, [[1 / 3, 0.0], [1 / 3, 0.5]])
    # a row in leaf 0 of tree 0 and leaf 1 of tree 1: 1/3 / 3 + 1/2 / 2
    got = ensemble_variance(np.array([[0, 1], [1, 0]]), counts, variances)
    np.testing.assert_allclose(got, [1 / 9 + 1 / 4, 0.0 + 1 / 9])


def test_a_single_row_leaf_has_no_variance() -> None:
    counts, variances = leaf_statistics(np.array([[0], [1], [1]]), np.array([0.3, 0.0, 1.0]), 2)
    assert counts.tolist() == [[1, 2]] and variances.tolist() == [[0.0, 0.5]]


def _world(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two features; the best of three actions by the quadrant of a quadratic boundary."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2))
    y = np.where(x[:, 0] ** 2 + x[:, 1] ** 2 < 0.5, 0, np.where(x[:, 0] > 0, 1, 2))
    return x, y


@pytest.mark.parametrize("rule", ["ucb", "ts"])
def test_learns_a_simple_world_and_its_mean_is_the_boosters(rule: str) -> None:
    x, y = _world(1000, 0)
    agent = TreeEnsembleAgent(3, 2, rule=rule, seed=0)  # type: ignore[arg-type]
    losses = []
    for i, (row, label) in enumerate(zip(x, y.tolist(), strict=True)):
        decision = agent.act(row, event_id=f"e{i}")
        loss = float(decision.action != label)
        agent.learn(decision, Feedback(loss=loss))
        losses.append(loss)
    assert np.mean(losses[:100]) > 0.5  # uniform before the first fit
    assert np.mean(losses[-300:]) < 0.25  # the best constant loses 0.61
    x_test, y_test = _world(500, 1)
    assert np.mean(agent.predict(x_test) == y_test) > 0.9
    bandit = agent.bandit
    assert bandit.fits == sum(is_refit_round(n) for n in range(1, 1001))
    mean, variance = bandit.estimates(x_test[:5])
    booster_mean = bandit._booster.predict(bandit.design(x_test[:5])).reshape(5, 3)
    np.testing.assert_allclose(mean, booster_mean, rtol=1e-9, atol=1e-9)
    assert np.all(variance > 0) and np.all(np.isfinite(variance))


def test_bad_settings_and_input_are_refused() -> None:
    with pytest.raises(ValueError, match="n_actions must be >= 2"):
        TreeEnsembleBandit(1, 2)
    with pytest.raises(ValueError, match="rule"):
        TreeEnsembleBandit(2, 2, rule="eps")  # type: ignore[arg-type]
    bandit = TreeEnsembleBandit(2, 2)
    with pytest.raises(ValueError, match=r"action must be in \[0, 2\)"):
        bandit.observe([0.0, 0.0], 2, 1.0)
    with pytest.raises(ValueError, match="reward must be finite"):
        bandit.observe([0.0, 0.0], 0, float("nan"))
