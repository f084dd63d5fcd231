"""Softmax (Boltzmann) exploration."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.models.dgt.tree_ops import FloatArray


def softmax(scores: FloatArray, temperature: float) -> FloatArray:
    """``p(k) proportional to exp(scores_k / temperature)``."""
    z = (scores - scores.max()) / temperature
    e = np.exp(z)
    pmf: FloatArray = e / e.sum()
    return pmf


@dataclass(frozen=True)
class Softmax:
    """Boltzmann explorer with a positive temperature (in units of the scores).

    Examples
    --------
    >>> import numpy as np
    >>> Softmax(1.0)(np.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """

    temperature: float = 0.1
    name: str = "softmax"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0.0):
            raise ValueError(f"temperature must be > 0, got {self.temperature}")

    def __call__(self, scores: FloatArray) -> FloatArray:
        return softmax(scores, self.temperature)

    @property
    def min_probability_factor(self) -> float:
        return 0.0
