"""Inverse propensity scoring (IPS)."""

from __future__ import annotations

from banditree.core.arrays import FloatArray
from banditree.ope.base import LoggedRounds, OffPolicyEstimator


class InverseProbabilityWeighting(OffPolicyEstimator):
    """IPS: ``mean_i w_i r_i`` with ``w_i = pi_e(a_i | x_i) / p_i``; unbiased when every
    action the evaluation policy plays has a positive logging propensity.

    Examples
    --------
    >>> import numpy as np
    >>> from banditree.ope import check_logged_rounds
    >>> log = check_logged_rounds(reward=np.array([1.0, 0.0]), action=np.array([0, 1]),
    ...     propensity=np.array([0.5, 0.5]), action_dist=np.array([[1.0, 0.0], [1.0, 0.0]]))
    >>> InverseProbabilityWeighting().estimate(log)
    1.0
    """

    name = "ips"

    def _round_rewards(self, log: LoggedRounds) -> FloatArray:
        out: FloatArray = log.importance_weights() * log.reward
        return out
