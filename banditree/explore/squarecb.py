"""SquareCB: inverse-gap weighting of Foster and Rakhlin (2020), gamma growing with rounds."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray

#: running sums in index order (``np.add.reduce`` adds pairwise: other roundings)
_add_in_order = np.add.accumulate


def squarecb(scores: FloatArray, gamma: float) -> FloatArray:
    """``p(k) = 1 / (K + gamma (s_best - s_k))`` for ``k != best``; the best action gets the rest.

    The rest is ``1`` minus the others' masses added in index order (as
    :meth:`SquareCB.rows` and :meth:`SquareCB.pmf_list` add them: the same numbers).
    """
    k = scores.shape[0]
    best = int(scores.argmax())  # the method: np.argmax adds a Python wrapper per call
    pmf: FloatArray = np.subtract(scores[best], scores)
    pmf *= gamma
    pmf += k
    np.divide(1.0, pmf, out=pmf)  # in place: the same operations, fewer allocations
    pmf[best] = 0.0
    pmf[best] = 1.0 - _add_in_order(pmf)[-1]
    return pmf


@dataclass(frozen=True)
class SquareCB:
    """Inverse-gap weighting with ``gamma_t = gamma_scale * t^exponent`` after ``t`` rounds.

    As Vowpal Wabbit's ``--squarecb`` (``gamma_scale`` 10, exponent 1/2): uniform at
    first (``t = 0``), greedier as the reward estimates improve.  ``exponent`` 0 is a
    constant ``gamma = gamma_scale``.  Scores are predicted rewards; an action whose
    score is ``g`` below the best gets ``1 / (K + gamma_t g)``.

    Examples
    --------
    >>> import numpy as np
    >>> SquareCB(0.0)(np.array([0.2, 0.9])).tolist()
    [0.5, 0.5]
    >>> SquareCB(10.0, 0.5).gamma_at(100)
    100.0
    """

    gamma_scale: float = 10.0
    exponent: float = 0.5
    name: str = "squarecb"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.gamma_scale) and self.gamma_scale >= 0.0):
            raise ValueError(f"gamma must be >= 0, got {self.gamma_scale}")
        if not (math.isfinite(self.exponent) and 0.0 <= self.exponent <= 2.0):
            raise ValueError(f"exponent must be in [0, 2], got {self.exponent}")

    def gamma_at(self, t: int) -> float:
        """Gamma after ``t`` learned rounds."""
        return self.gamma_scale * float(t) ** self.exponent if self.exponent else self.gamma_scale

    def _loss(self, top: float) -> float:
        """What gamma is divided by at a best score ``top``: 1 (FastCB: its predicted loss)."""
        return 1.0

    def _losses(self, top: FloatArray) -> FloatArray | float:
        """:meth:`_loss` for the best scores ``top`` ``(B,)`` of a batch."""
        return 1.0

    def __call__(self, scores: FloatArray, t: int = 0) -> FloatArray:
        return squarecb(scores, self.gamma_at(t) / self._loss(float(scores.max())))

    def pmf_list(self, scores: list[float], best: int, t: int = 0) -> list[float]:
        """:meth:`__call__` on Python floats, ``best`` the argmax of ``scores`` (few actions)."""
        k, top = len(scores), scores[best]
        gamma = self.gamma_at(t) / self._loss(top)
        pmf = [1.0 / ((top - s) * gamma + k) for s in scores]
        pmf[best] = 0.0
        rest = 0.0
        for p in pmf:  # in index order, as squarecb() adds
            rest += p
        pmf[best] = 1.0 - rest
        return pmf

    def rows(self, scores: FloatArray, t: int = 0) -> FloatArray:
        """:meth:`__call__` for every row of ``scores`` ``(B, K)`` at once."""
        batch, k = scores.shape
        index = np.arange(batch)
        best = np.argmax(scores, axis=1)
        top = scores[index, best]
        gamma = np.reshape(self.gamma_at(t) / self._losses(top), (-1, 1))
        pmf = 1.0 / (k + gamma * (top[:, None] - scores))
        pmf[index, best] = 0.0
        pmf[index, best] = 1.0 - _add_in_order(pmf, axis=1)[:, -1]
        return pmf

    def min_probability(self, n_actions: int, t: int = 0) -> float:
        """A floor for scores in ``[0, 1]`` (gaps at most 1, the divisor least at a best
        score of 1)."""
        return 1.0 / (n_actions + self.gamma_at(t) / self._loss(1.0))
