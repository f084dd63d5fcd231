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

from typing import Any


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
