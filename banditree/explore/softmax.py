"""Softmax (Boltzmann) exploration with an optional cooling schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray


def softmax(scores: FloatArray, temperature: float) -> FloatArray:
    """``p(k) proportional to exp(scores_k / temperature)``."""
    z = (scores - scores.max()) / temperature
    e = np.exp(z)
    pmf: FloatArray = e / e.sum()
    return pmf


@dataclass(frozen=True)
class Softmax:
    """Boltzmann explorer: ``temperature_t = temperature (1 + t)^(-exponent)`` (score units).

    Examples
    --------
    >>> import numpy as np
    >>> Softmax(1.0)(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    temperature: float = 0.1
    exponent: float = 0.0
    name: str = "softmax"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0.0):
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not (math.isfinite(self.exponent) and 0.0 <= self.exponent <= 2.0):
            raise ValueError(f"exponent must be in [0, 2], got {self.exponent}")

    def temperature_at(self, t: int) -> float:
        """Temperature after ``t`` learned rounds."""
        return (
            self.temperature
            if not self.exponent
            else self.temperature * (1.0 + t) ** -self.exponent
        )

    def __call__(self, scores: FloatArray, t: int = 0) -> FloatArray:
        return softmax(scores, self.temperature_at(t))

    def rows(self, scores: FloatArray, t: int = 0) -> FloatArray:
        """:meth:`__call__` for every row of ``scores`` ``(B, K)`` at once."""
        z = (scores - scores.max(axis=1, keepdims=True)) / self.temperature_at(t)
        e = np.exp(z)
        pmf: FloatArray = e / e.sum(axis=1, keepdims=True)
        return pmf

    def min_probability(self, n_actions: int, t: int = 0) -> float:
        return 0.0
