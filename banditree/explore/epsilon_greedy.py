"""Epsilon-greedy exploration, eq. 7 of the DGT paper."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.models.dgt.tree_ops import FloatArray


def epsilon_greedy(scores: FloatArray, epsilon: float) -> FloatArray:
    """``p(k) = (1 - epsilon) 1[k = argmax scores] + epsilon / K`` (ties: lowest index)."""
    k = scores.shape[0]
    pmf = np.full(k, epsilon / k)
    pmf[scores.argmax()] += 1.0 - epsilon
    return pmf


@dataclass(frozen=True)
class EpsilonGreedy:
    """Epsilon-greedy explorer: every action has probability at least ``epsilon / K``.

    Examples
    --------
    >>> import numpy as np
    >>> EpsilonGreedy(0.3)(np.array([0.1, 0.9, 0.2])).round(3).tolist()
    [0.1, 0.8, 0.1]
    """

    epsilon: float = 0.3
    name: str = "epsilon_greedy"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and 0.0 <= self.epsilon <= 1.0):
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")

    def __call__(self, scores: FloatArray) -> FloatArray:
        return epsilon_greedy(scores, self.epsilon)

    @property
    def min_probability_factor(self) -> float:
        return self.epsilon
