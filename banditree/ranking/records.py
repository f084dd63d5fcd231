"""The record of one ranking decision: the whole candidate set, so that replay and
off-policy estimates work over action sets that change from call to call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankDecision:
    """One ranking decision.

    ``action_ids`` and ``action_features`` are the candidates in the order given;
    ``chosen`` indexes the one played (Personalizer's ``rewardActionId``);
    ``probabilities`` is the probability each candidate had of being played.
    """

    event_id: str
    context: tuple[float, ...]
    action_ids: tuple[str, ...]
    action_features: tuple[tuple[float, ...], ...]
    chosen: int
    probabilities: tuple[float, ...]
    greedy: int
    model_version: int

    @property
    def chosen_id(self) -> str:
        return self.action_ids[self.chosen]

    @property
    def propensity(self) -> float:
        """The probability the chosen candidate was played with."""
        return self.probabilities[self.chosen]

    def ranking(self) -> list[tuple[str, float]]:
        """``(id, probability)`` of every candidate: the chosen first, then by probability."""
        order = sorted(
            range(len(self.action_ids)),
            key=lambda i: (i != self.chosen, -self.probabilities[i], i),
        )
        return [(self.action_ids[i], self.probabilities[i]) for i in order]
