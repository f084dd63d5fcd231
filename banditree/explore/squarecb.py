"""SquareCB: inverse-gap weighting of Foster and Rakhlin (2020)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.models.dgt.tree_ops import FloatArray


def squarecb(scores: FloatArray, gamma: float) -> FloatArray:
    """``p(k) = 1 / (K + gamma (s_best - s_k))`` for ``k != best``; the best action gets the rest."""
    k = scores.shape[0]
    best = int(np.argmax(scores))
    pmf = 1.0 / (k + gamma * (scores[best] - scores))
    pmf[best] = 0.0
    pmf[best] = 1.0 - pmf.sum()
    return pmf


@dataclass(frozen=True)
class SquareCB:
    """Inverse-gap weighting with learning rate ``gamma`` >= 0 (0 = uniform).

    Examples
    --------
    >>> import numpy as np
    >>> SquareCB(0.0)(np.array([0.2, 0.9])).tolist()
    [0.5, 0.5]
    """

    gamma: float = 100.0
    name: str = "squarecb"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.gamma) and self.gamma >= 0.0):
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")

    def __call__(self, scores: FloatArray) -> FloatArray:
        return squarecb(scores, self.gamma)

    @property
    def min_probability_factor(self) -> float:
        return 0.0
