"""FastCB: inverse-gap weighting reweighted by the greedy action's predicted loss.

Foster and Krishnamurthy (2021), *Efficient first-order contextual bandits*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.explore.squarecb import SquareCB, squarecb

#: smallest predicted loss of the greedy action FastCB divides by: a predicted reward at
#: or above ``1 - LOSS_FLOOR`` (possible for an unclipped regression of the reward)
#: explores as if its loss were this
LOSS_FLOOR = 0.01


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
class FastCB(SquareCB):
    """FastCB's reweighted inverse-gap weighting, ``gamma_t = gamma_scale * t^exponent``.

    :class:`~banditree.explore.squarecb.SquareCB` with its gamma divided by the greedy
    action's predicted loss: scores are predicted rewards in ``[0, 1]``, the loss one
    minus the best score, clipped to ``[LOSS_FLOOR, 1]``.  At a loss of 1 it is SquareCB
    at the same gamma.  The paper pairs it with a log-loss regression oracle; here it
    reads the learner's reward regression like SquareCB does (measured in
    ``benchmarks/quality/bandit_vs_vw.py``).

    Examples
    --------
    >>> import numpy as np
    >>> FastCB(10.0, 0.0)(np.array([0.5, 0.0])).tolist()  # loss 0.5: SquareCB at 20
    [0.9166666666666666, 0.08333333333333333]
    >>> round(float(FastCB(10.0, 0.0)(np.array([0.9, 0.4]))[1]), 6)  # loss 0.1: SquareCB at 100
    0.019231
    """

    name: str = "fastcb"

    def _loss(self, top: float) -> float:
        return greedy_loss(top)

    def _losses(self, top: FloatArray) -> FloatArray | float:
        losses: FloatArray = np.clip(1.0 - top, LOSS_FLOOR, 1.0)
        return losses
