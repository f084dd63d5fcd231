"""Self-normalised inverse propensity scoring (SNIPS)."""

from __future__ import annotations

from banditree.models.tree_ops import FloatArray
from banditree.ope.base import LoggedRounds, OffPolicyEstimator


class SelfNormalizedInverseProbabilityWeighting(OffPolicyEstimator):
    """SNIPS: ``sum_i w_i r_i / sum_i w_i``; slightly biased, far less variance than IPS.

    When no logged action has a positive weight the estimate is 0.
    """

    name = "snips"
    self_normalized = True

    def _round_rewards(self, log: LoggedRounds) -> FloatArray:
        out: FloatArray = log.importance_weights() * log.reward
        return out
