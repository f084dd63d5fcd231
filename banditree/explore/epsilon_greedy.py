"""Epsilon-greedy exploration, eq. 7 of the DGT paper, with an optional decay schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray


def epsilon_greedy(scores: FloatArray, epsilon: float) -> FloatArray:
    """``p(k) = (1 - epsilon) 1[k = argmax scores] + epsilon / K`` (ties: lowest index)."""
    k = scores.shape[0]
    pmf = np.full(k, epsilon / k)
    pmf[scores.argmax()] += 1.0 - epsilon
    return pmf


@dataclass(frozen=True)
class EpsilonGreedy:
    """Epsilon-greedy: ``epsilon_t = epsilon (1 + t)^(-exponent)`` after ``t`` learned rounds.

    ``exponent`` 0 (the default) keeps epsilon constant; 1/3 is the classic schedule
    of epsilon-greedy's regret bound.  Every action gets at least ``epsilon_t / K``.

    Examples
    --------
    >>> import numpy as np
    >>> EpsilonGreedy(0.3)(np.array([0.1, 0.9, 0.2])).round(3).tolist()
    [0.1, 0.8, 0.1]
    >>> EpsilonGreedy(1.0, exponent=0.5).epsilon_at(99)
    0.1
    """

    epsilon: float = 0.3
    exponent: float = 0.0
    name: str = "epsilon_greedy"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and 0.0 <= self.epsilon <= 1.0):
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if not (math.isfinite(self.exponent) and 0.0 <= self.exponent <= 2.0):
            raise ValueError(f"exponent must be in [0, 2], got {self.exponent}")

    def epsilon_at(self, t: int) -> float:
        """Epsilon after ``t`` learned rounds."""
        return self.epsilon if not self.exponent else self.epsilon * (1.0 + t) ** -self.exponent

    def __call__(self, scores: FloatArray, t: int = 0) -> FloatArray:
        return epsilon_greedy(scores, self.epsilon_at(t))

    def pmf_list(self, scores: list[float], best: int, t: int = 0) -> list[float]:
        """:meth:`__call__` on Python floats, ``best`` the argmax of ``scores`` (few actions)."""
        k = len(scores)
        epsilon = self.epsilon_at(t)
        pmf = [epsilon / k] * k
        pmf[best] += 1.0 - epsilon
        return pmf

    def rows(self, scores: FloatArray, t: int = 0) -> FloatArray:
        """:meth:`__call__` for every row of ``scores`` ``(B, K)`` at once."""
        batch, k = scores.shape
        epsilon = self.epsilon_at(t)
        pmf = np.full((batch, k), epsilon / k)
        pmf[np.arange(batch), scores.argmax(axis=1)] += 1.0 - epsilon
        return pmf

    def min_probability(self, n_actions: int, t: int = 0) -> float:
        return self.epsilon_at(t) / n_actions
