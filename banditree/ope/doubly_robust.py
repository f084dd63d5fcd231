"""Doubly robust (DR) estimation with a reward model."""

from __future__ import annotations

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.ope.base import LoggedRounds, OffPolicyEstimator


class DoublyRobust(OffPolicyEstimator):
    """DR: ``q(x_i, pi_e) + w_i (r_i - q(x_i, a_i))`` with ``q`` a reward model.

    ``q(x, pi_e) = sum_a pi_e(a | x) q(x, a)``.  Unbiased when either the propensities
    or the reward model are right; low variance when the model is good.
    """

    name = "dr"
    needs_reward_model = True

    def _round_rewards(self, log: LoggedRounds) -> FloatArray:
        assert log.estimated_rewards is not None
        q = log.estimated_rewards
        direct = np.sum(log.action_dist * q, axis=1)
        q_logged = q[np.arange(log.n_rounds), log.action]
        out: FloatArray = direct + log.importance_weights() * (log.reward - q_logged)
        return out
