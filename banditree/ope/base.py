"""The off-policy estimator base: validation, averaging and bootstrap intervals.

An estimator overrides one per-row method, :meth:`OffPolicyEstimator._round_rewards`;
the base class validates the arrays, averages the rows into a policy value, and
gives a bootstrap confidence interval by resampling logged rounds (the whole
estimator is recomputed on each resample, so self-normalisation is resampled too).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray


@dataclass(frozen=True)
class LoggedRounds:
    """A validated bandit log and the evaluation policy's action distribution.

    Shapes: ``reward``, ``action``, ``propensity`` ``(n,)``; ``action_dist`` ``(n, K)``
    (the evaluation policy's probability of each action in each round's context);
    ``estimated_rewards`` ``(n, K)`` (a reward model's prediction, for DR) or None.
    """

    reward: FloatArray
    action: np.ndarray
    propensity: FloatArray
    action_dist: FloatArray
    estimated_rewards: FloatArray | None = None

    @property
    def n_rounds(self) -> int:
        return int(self.reward.shape[0])

    def importance_weights(self) -> FloatArray:
        """``pi_e(a_i | x_i) / p_i`` for the logged action of every round."""
        n = self.n_rounds
        w: FloatArray = self.action_dist[np.arange(n), self.action] / self.propensity
        return w


def check_logged_rounds(
    *,
    reward: np.ndarray,
    action: np.ndarray,
    propensity: np.ndarray,
    action_dist: np.ndarray,
    estimated_rewards: np.ndarray | None = None,
) -> LoggedRounds:
    """Validate a log; every error names the array and the bound it breaks."""
    reward = np.asarray(reward, dtype=np.float64)
    propensity = np.asarray(propensity, dtype=np.float64)
    action_dist = np.asarray(action_dist, dtype=np.float64)
    if reward.ndim != 1 or reward.shape[0] == 0:
        raise ValueError(f"reward must be a non-empty 1-d array, got shape {reward.shape}")
    n = reward.shape[0]
    raw_action = np.asarray(action)
    if raw_action.shape != (n,):
        raise ValueError(f"action must have shape ({n},) like reward, got {raw_action.shape}")
    if not np.all(raw_action == np.round(raw_action)):
        raise ValueError("action must hold integer action indices")
    act = raw_action.astype(np.int64)
    if propensity.shape != (n,):
        raise ValueError(f"propensity must have shape ({n},) like reward, got {propensity.shape}")
    if not np.isfinite(reward).all():
        raise ValueError("reward must be finite")
    if not (np.all(propensity > 0) and np.all(propensity <= 1)):
        raise ValueError("propensity must be in (0, 1]")
    if action_dist.ndim != 2 or action_dist.shape[0] != n:
        raise ValueError(f"action_dist must have shape ({n}, n_actions), got {action_dist.shape}")
    k = action_dist.shape[1]
    if act.min() < 0 or act.max() >= k:
        raise ValueError(f"action must be in [0, {k - 1}] (action_dist has {k} columns)")
    if not (np.all(action_dist >= 0) and np.allclose(action_dist.sum(axis=1), 1.0, atol=1e-6)):
        raise ValueError("action_dist rows must be probabilities summing to 1")
    est = None
    if estimated_rewards is not None:
        est = np.asarray(estimated_rewards, dtype=np.float64)
        if est.shape != action_dist.shape:
            raise ValueError(
                f"estimated_rewards must have shape {action_dist.shape} like action_dist, got {est.shape}"
            )
        if not np.isfinite(est).all():
            raise ValueError("estimated_rewards must be finite")
    return LoggedRounds(reward, act, propensity, action_dist, est)


class OffPolicyEstimator(ABC):
    """Estimates the value (mean reward) of an evaluation policy from a logged policy's data.

    Subclasses write :meth:`_round_rewards`; a self-normalised estimator sets
    ``self_normalized = True`` and the base divides by the mean importance weight.
    """

    name: str = "estimator"
    needs_reward_model: bool = False
    self_normalized: bool = False

    @abstractmethod
    def _round_rewards(self, log: LoggedRounds) -> FloatArray:
        """Per-round contributions whose mean is the (unnormalised) estimate."""

    def _terms(self, log: LoggedRounds) -> tuple[FloatArray, FloatArray | None]:
        if self.needs_reward_model and log.estimated_rewards is None:
            raise ValueError(f"{self.name} needs estimated_rewards (a reward model's predictions)")
        weights = log.importance_weights() if self.self_normalized else None
        return self._round_rewards(log), weights

    @staticmethod
    def _combine(rewards: FloatArray, weights: FloatArray | None) -> float:
        if weights is None:
            return float(np.mean(rewards))
        total = float(np.sum(weights))
        return float(np.sum(rewards) / total) if total > 0 else 0.0

    def estimate(self, log: LoggedRounds) -> float:
        """The estimated policy value."""
        return self._combine(*self._terms(log))

    def estimate_interval(
        self, log: LoggedRounds, *, n_bootstrap: int = 1000, alpha: float = 0.05, seed: int = 0
    ) -> tuple[float, float]:
        """Percentile bootstrap ``(1 - alpha)`` interval: rounds are resampled with
        replacement and the estimate (normalisation included) recomputed on each."""
        if n_bootstrap < 10:
            raise ValueError(f"n_bootstrap must be >= 10, got {n_bootstrap}")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        rewards, weights = self._terms(log)
        rng = np.random.default_rng(seed)
        n = log.n_rounds
        values = np.empty(n_bootstrap)
        for b in range(n_bootstrap):
            rows = rng.integers(0, n, n)
            values[b] = self._combine(rewards[rows], None if weights is None else weights[rows])
        low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
        return float(low), float(high)

    def summary(
        self, log: LoggedRounds, *, n_bootstrap: int = 1000, seed: int = 0
    ) -> dict[str, float | list[float]]:
        """``{"value": v, "value_ci95": [low, high]}``."""
        value = self.estimate(log)
        low, high = self.estimate_interval(log, n_bootstrap=n_bootstrap, seed=seed)
        return {"value": value, "value_ci95": [low, high]}
