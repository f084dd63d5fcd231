"""FastCB: inverse-gap weighting reweighted by the greedy action's predicted loss.

Foster and Krishnamurthy (2021), *Efficient first-order contextual bandits*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from banditree.explore.squarecb import squarecb
from banditree.models.dgt.tree_ops import FloatArray

#: smallest predicted loss of the greedy action FastCB divides by: a predicted reward at
#: or above ``1 - LOSS_FLOOR`` (possible for an unclipped regression of the reward)
#: explores as if its loss were this
LOSS_FLOOR = 0.01
_add_in_order = np.add.accumulate


def greedy_loss(top: float) -> float:
    """The greedy action's predicted loss ``1 - top``, clipped to ``[LOSS_FLOOR, 1]``."""
    return min(max(1.0 - top, LOSS_FLOOR), 1.0)


def fastcb(scores: FloatArray, gamma: float) -> FloatArray:
    """``p(k) = l / (K l + gamma (s_best - s_k))`` for ``k != best``, ``l`` the best's loss.

    That is SquareCB (:func:`~banditree.explore.squarecb.squarecb`) at ``gamma / l``:
    where the greedy action is predicted to lose rarely, a gap costs more exploration
    than it would at a loss of 1 (SquareCB's worst case), so a policy that is nearly
    always right stops paying for exploration it does not need.
    """
    return squarecb(scores, gamma / greedy_loss(float(scores.max())))


@dataclass(frozen=True)
class FastCB:
    """FastCB's reweighted inverse-gap weighting, ``gamma_t = gamma_scale * t^exponent``.

    Scores are predicted rewards in ``[0, 1]`` (the loss of the greedy action is one
    minus its score, clipped to ``[LOSS_FLOOR, 1]``).  With a predicted loss of 1 it is
    SquareCB at the same gamma; at a loss ``l`` it is SquareCB at ``gamma / l``.  The
    paper pairs it with a log-loss regression oracle; here it reads the learner's
    reward regression like SquareCB does (measured in ``benchmarks/bandit_vs_vw.py``).

    Examples
    --------
    >>> import numpy as np
    >>> FastCB(10.0, 0.0)(np.array([0.5, 0.0])).tolist()  # loss 0.5: SquareCB at 20
    [0.9166666666666666, 0.08333333333333333]
    >>> round(FastCB(10.0, 0.0)(np.array([0.9, 0.4]))[1], 6)  # loss 0.1: SquareCB at 100
    0.019231
    """

    gamma_scale: float = 10.0
    exponent: float = 0.5
    name: str = "fastcb"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.gamma_scale) and self.gamma_scale >= 0.0):
            raise ValueError(f"gamma must be >= 0, got {self.gamma_scale}")
        if not (math.isfinite(self.exponent) and 0.0 <= self.exponent <= 2.0):
            raise ValueError(f"exponent must be in [0, 2], got {self.exponent}")

    def gamma_at(self, t: int) -> float:
        """Gamma after ``t`` learned rounds (before the division by the greedy loss)."""
        return self.gamma_scale * float(t) ** self.exponent if self.exponent else self.gamma_scale

    def __call__(self, scores: FloatArray, t: int = 0) -> FloatArray:
        return fastcb(scores, self.gamma_at(t))

    def pmf_list(self, scores: list[float], best: int, t: int = 0) -> list[float]:
        """:meth:`__call__` on Python floats, ``best`` the argmax of ``scores`` (few actions)."""
        k, top = len(scores), scores[best]
        gamma = self.gamma_at(t) / greedy_loss(top)
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
        gamma = self.gamma_at(t) / np.clip(1.0 - top, LOSS_FLOOR, 1.0)
        pmf = 1.0 / (k + gamma[:, None] * (top[:, None] - scores))
        pmf[index, best] = 0.0
        pmf[index, best] = 1.0 - _add_in_order(pmf, axis=1)[:, -1]
        return pmf

    def min_probability(self, n_actions: int, t: int = 0) -> float:
        """A floor for scores in ``[0, 1]`` (gaps at most 1, the loss at least the floor)."""
        return 1.0 / (n_actions + self.gamma_at(t) / LOSS_FLOOR)
