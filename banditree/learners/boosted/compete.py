"""Which of the online tree and the refitted ensemble decides: progressive squared error.

Each learned round, before either model learns from it, both predict the reward of the
played action; the squared errors are averaged with exponentially decaying weights
(half-life ``halflife`` rounds).  Predictions made before the outcome is known are an
honest estimate of each model's error on the rounds to come (progressive validation),
and a reward regression of lower squared error is what a greedy or inverse-gap policy
needs (Foster and Rakhlin's SquareCB reduction).  The online tree decides until the
ensemble has been scored on ``min_rounds`` rounds and has the lower error.

With the played action's propensity, the same decayed sums also estimate each model's
greedy policy's reward by inverse propensity weighting (a round counts for a model when
its greedy action is the one played): ``online_policy_loss`` and
``ensemble_policy_loss``, one minus those estimates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray


class ProgressiveErrors:
    """Decayed mean squared errors of the online tree and of the ensemble.

    Parameters
    ----------
    halflife
        Rounds after which a round's weight is halved.
    min_rounds
        Rounds the ensemble is scored on before it may decide.
    """

    def __init__(self, halflife: float, min_rounds: int) -> None:
        self.decay = 0.5 ** (1.0 / halflife)
        self.min_rounds = min_rounds
        self.online = 0.0
        self.ensemble = 0.0
        self.rounds = 0
        self.weight = 0.0
        self.online_value = 0.0
        self.ensemble_value = 0.0
        self.cross = 0.0

    def update(
        self,
        online: float,
        ensemble: float,
        reward: float,
        greedy: tuple[bool, bool] = (False, False),
        propensity: float = 1.0,
    ) -> None:
        """Score one round: the two predicted rewards of the played action and its reward;
        ``greedy``: whether the played action is the online tree's and the ensemble's
        greedy one, ``propensity`` its probability."""
        d = self.decay
        self.online = d * self.online + (online - reward) ** 2
        self.ensemble = d * self.ensemble + (ensemble - reward) ** 2
        self.cross = d * self.cross + (online - reward) * (ensemble - reward)
        self.weight = d * self.weight + 1.0
        self.online_value = d * self.online_value + greedy[0] * reward / propensity
        self.ensemble_value = d * self.ensemble_value + greedy[1] * reward / propensity
        self.rounds += 1

    def update_rounds(
        self, online: list[float], ensemble: list[float], rewards: list[float]
    ) -> None:
        """:meth:`update` of each round in order, neither model's action the greedy one
        and propensity 1 (how squared-error scoring calls it): the same operations."""
        d = self.decay
        e_online, e_ensemble, cross = self.online, self.ensemble, self.cross
        weight, online_value, ensemble_value = self.weight, self.online_value, self.ensemble_value
        for o, e, r in zip(online, ensemble, rewards, strict=True):
            e_online = d * e_online + (o - r) ** 2
            e_ensemble = d * e_ensemble + (e - r) ** 2
            cross = d * cross + (o - r) * (e - r)
            weight = d * weight + 1.0
            online_value = d * online_value + 0.0  # update's greedy term: never greedy
            ensemble_value = d * ensemble_value + 0.0
        self.online, self.ensemble, self.cross = e_online, e_ensemble, cross
        self.weight, self.online_value, self.ensemble_value = weight, online_value, ensemble_value
        self.rounds += len(rewards)

    @property
    def online_policy_loss(self) -> float:
        """One minus the estimated reward of the online tree's greedy policy (>= 1e-6)."""
        return max(1.0 - self.online_value / max(self.weight, 1e-12), 1e-6)

    @property
    def ensemble_policy_loss(self) -> float:
        """One minus the estimated reward of the ensemble's greedy policy (>= 1e-6)."""
        return max(1.0 - self.ensemble_value / max(self.weight, 1e-12), 1e-6)

    @property
    def stacked_weight(self) -> float:
        """The ensemble's weight ``w`` in ``w ensemble + (1 - w) online`` of the least
        decayed squared error over the scored rounds (in ``[0, 1]``; 0.5 while both
        errors agree everywhere).  Unlike inverse-error weights it reads how far the two
        models' errors go together: where both miss the same rounds, the better model
        takes nearly all the weight."""
        spread = self.online + self.ensemble - 2.0 * self.cross  # sum of (e_o - e_e)^2
        if spread <= 1e-12 * max(self.online + self.ensemble, 1e-300):
            return 0.5
        return min(max((self.online - self.cross) / spread, 0.0), 1.0)

    @property
    def ensemble_leads(self) -> bool:
        """Whether the ensemble decides (scored enough, and the lower decayed error)."""
        return self.rounds >= self.min_rounds and self.ensemble < self.online

    def state(self) -> dict[str, Any]:
        return {
            "online": self.online,
            "ensemble": self.ensemble,
            "rounds": self.rounds,
            "weight": self.weight,
            "online_value": self.online_value,
            "ensemble_value": self.ensemble_value,
            "cross": self.cross,
        }

    def load(self, meta: dict[str, Any]) -> None:
        self.online = float(meta["online"])
        self.ensemble = float(meta["ensemble"])
        self.rounds = int(meta["rounds"])
        # checkpoints written before the policy values: none scored yet
        self.weight = float(meta.get("weight", 0.0))
        self.online_value = float(meta.get("online_value", 0.0))
        self.ensemble_value = float(meta.get("ensemble_value", 0.0))
        self.cross = float(meta.get("cross", 0.0))


class PolicySwitch:
    """Whether a challenger's greedy policy beats the blend's, by doubly robust estimates.

    Each scored round, the doubly robust value of a deterministic policy ``g`` (its
    greedy action), ``q(g) + 1[a = g] (r - q(a)) / p``, is unbiased for its reward
    whatever policy logged the round (the played action ``a`` at propensity ``p``,
    reward ``r``; ``q`` a reward model, here the blend's predictions).  The difference of
    a challenger's value and the incumbent blend's is 0 on every round where their
    greedy actions agree, so the paired sum reads only the rounds that tell them apart.
    Decayed sums (half-life ``halflife`` rounds) of that difference and its square give
    its mean and a standard error over the effective number of rounds; the challenger
    decides once its mean is ``z_on`` standard errors above 0, and the blend again when
    that falls under ``z_off``.

    Parameters
    ----------
    challengers
        How many challengers are scored against the blend.
    halflife
        Rounds after which a round's weight is halved.
    min_rounds
        Rounds scored before any challenger may decide.
    """

    #: the standard errors a challenger's mean gain must pass to take over
    Z_ON = 2.0
    #: ... and under which the blend decides again
    Z_OFF = 1.0

    def __init__(self, challengers: int, halflife: float, min_rounds: int) -> None:
        self.decay = 0.5 ** (1.0 / halflife)
        self.min_rounds = min_rounds
        self.rounds = 0
        self.weight = 0.0
        self.weight_sq = 0.0
        self.gain = [0.0] * challengers
        self.gain_sq = [0.0] * challengers
        #: the challenger deciding (an index into the challengers), or -1: the blend
        self.chosen = -1

    def update(
        self,
        q: Sequence[float],
        incumbent: int,
        challengers: Sequence[int],
        action: int,
        reward: float,
        propensity: float,
    ) -> None:
        """Score one round: ``q`` the reward model's predictions ``(K,)``, the greedy
        actions of the blend (``incumbent``) and of each challenger, the played action,
        its reward and propensity; then re-decide who decides."""
        correction = (reward - q[action]) / propensity
        base = q[incumbent] + (correction if action == incumbent else 0.0)
        self._add(
            [q[greedy] + (correction if action == greedy else 0.0) - base for greedy in challengers]
        )

    def update_pmfs(
        self,
        q: FloatArray,
        incumbent: FloatArray,
        challengers: Sequence[FloatArray],
        action: int,
        reward: float,
        propensity: float,
    ) -> None:
        """Score one round of stochastic policies (``rule_switch``): ``q`` the reward
        model's predictions ``(K,)``, the incumbent's and each challenger's pmf ``(K,)``,
        the played action, its reward and propensity; then re-decide who decides.

        A pmf ``pi``'s doubly robust value is ``sum_a pi(a) q(a) + pi(action) (reward -
        q(action)) / propensity``; a challenger's gain is its value less the
        incumbent's, 0 where both pmfs agree.  For one-hot pmfs it is :meth:`update`'s.
        """
        correction = (reward - float(q[action])) / propensity
        gains = []
        for pmf in challengers:
            diff = pmf - incumbent
            gains.append(float(np.dot(diff, q)) + float(diff[action]) * correction)
        self._add(gains)

    def _add(self, gains: Sequence[float]) -> None:
        """One round's gain of each challenger into the decayed sums; re-decide."""
        d = self.decay
        self.weight = d * self.weight + 1.0
        self.weight_sq = d * d * self.weight_sq + 1.0
        for i, gain in enumerate(gains):
            self.gain[i] = d * self.gain[i] + gain
            self.gain_sq[i] = d * self.gain_sq[i] + gain * gain
        self.rounds += 1
        self._decide()

    def z(self, i: int) -> float:
        """Challenger ``i``'s mean gain over the blend in standard errors (0 unscored)."""
        w = self.weight
        if w <= 0.0:
            return 0.0
        mean = self.gain[i] / w
        variance = max(self.gain_sq[i] / w - mean * mean, 0.0)
        se = math.sqrt(variance * self.weight_sq) / w
        if se <= 0.0:
            return 0.0
        return mean / se

    def _decide(self) -> None:
        if self.rounds < self.min_rounds:
            self.chosen = -1
            return
        scores = [self.z(i) for i in range(len(self.gain))]
        if self.chosen >= 0 and scores[self.chosen] >= self.Z_OFF:
            return
        best = max(range(len(scores)), key=scores.__getitem__, default=-1)
        self.chosen = best if best >= 0 and scores[best] > self.Z_ON else -1

    def state(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "weight": self.weight,
            "weight_sq": self.weight_sq,
            "gain": list(self.gain),
            "gain_sq": list(self.gain_sq),
            "chosen": self.chosen,
        }

    def load(self, meta: dict[str, Any]) -> None:
        if len(meta["gain"]) != len(self.gain):
            raise ValueError("checkpoint scores another number of challengers")
        self.rounds = int(meta["rounds"])
        self.weight = float(meta["weight"])
        self.weight_sq = float(meta["weight_sq"])
        self.gain = [float(v) for v in meta["gain"]]
        self.gain_sq = [float(v) for v in meta["gain_sq"]]
        self.chosen = int(meta["chosen"])


class ActionErrors:
    """Decayed squared errors of both models per played action, for a blend weighted
    per action (``blend_weights: per_action``).

    Each action's mean errors are shrunk towards the means over every action as if
    those were measured on ``prior`` more rounds of it, so an action played rarely is
    blended as every action is.

    Parameters
    ----------
    n_actions
        ``K``.
    halflife
        Rounds (of any action) after which a round's weight is halved.
    prior
        Rounds of the all-action means each action's errors are shrunk with.
    """

    def __init__(self, n_actions: int, halflife: float, prior: float) -> None:
        self.decay = 0.5 ** (1.0 / halflife)
        self.prior = prior
        self.online = np.zeros(n_actions)
        self.ensemble = np.zeros(n_actions)
        self.weight = np.zeros(n_actions)

    def update(self, action: int, online: float, ensemble: float, reward: float) -> None:
        """Score one round of ``action``: both models' predicted reward and the reward."""
        d = self.decay
        self.online *= d
        self.ensemble *= d
        self.weight *= d
        self.online[action] += (online - reward) ** 2
        self.ensemble[action] += (ensemble - reward) ** 2
        self.weight[action] += 1.0

    def errors(self) -> tuple[FloatArray, FloatArray]:
        """Each action's shrunk mean errors of the tree and of the ensemble ``(K,)``."""
        total = max(float(self.weight.sum()), 1e-12)
        k = self.prior
        online = (self.online + k * float(self.online.sum()) / total) / (self.weight + k)
        ensemble = (self.ensemble + k * float(self.ensemble.sum()) / total) / (self.weight + k)
        return online, ensemble

    def state(self) -> dict[str, Any]:
        return {
            "online": self.online.tolist(),
            "ensemble": self.ensemble.tolist(),
            "weight": self.weight.tolist(),
        }

    def load(self, meta: dict[str, Any]) -> None:
        for name in ("online", "ensemble", "weight"):
            value = np.asarray(meta[name], dtype=np.float64)
            if value.shape != self.weight.shape or not np.all(np.isfinite(value)):
                raise ValueError(f"checkpoint's per-action {name} errors do not fit")
            setattr(self, name, value)
