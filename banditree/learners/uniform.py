"""The uniform-random baseline, with the learner interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.records import Decision, Feedback
from banditree.explore import event_uniforms
from banditree.learners.base import Learner, Tensors
from banditree.learners.validation import InvalidInput, as_context, as_contexts, check_loss


class UniformRandom(Learner):
    """Plays every action with probability ``1 / K`` and learns nothing (classification)."""

    task = "classification"

    def __init__(
        self,
        n_features: int,
        n_actions: int,
        *,
        seed: int = 0,
        config: dict[str, Any] | None = None,
    ) -> None:
        if n_features < 1 or n_actions < 2:
            raise ValueError(
                f"need n_features >= 1 and n_actions >= 2, got {n_features}, {n_actions}"
            )
        self.n_features, self.n_actions, self.seed = n_features, n_actions, seed
        self._config = dict(config or {})

    @property
    def version(self) -> int:
        return 0

    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        x = as_context(context, self.n_features)
        event_id = self._next_event_id(event_id)
        u, _ = event_uniforms(self.seed, event_id)
        action = min(int(u * self.n_actions), self.n_actions - 1)
        return Decision(
            event_id=event_id,
            context=tuple(x.tolist()),
            model_version=0,
            action=action,
            propensity=1.0 / self.n_actions,
            greedy_action=action,
            explored=True,
        )

    def act_batch(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
    ) -> list[Decision]:
        """:meth:`act` for every context of a batch ``(B, d)``, in one pass."""
        x = as_contexts(contexts, self.n_features)
        ids = self._next_event_ids(event_ids, x.shape[0])
        k, propensity = self.n_actions, 1.0 / self.n_actions
        decisions = []
        for event_id, row in zip(ids, x.tolist(), strict=True):
            action = min(int(event_uniforms(self.seed, event_id)[0] * k), k - 1)
            decisions.append(
                Decision(
                    event_id=event_id,
                    context=tuple(row),
                    model_version=0,
                    action=action,
                    propensity=propensity,
                    greedy_action=action,
                    explored=True,
                )
            )
        return decisions

    def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray:
        """``1 / K`` for every action ``(K,)``."""
        as_context(context, self.n_features)
        return np.full(self.n_actions, 1.0 / self.n_actions)

    def check(self, decision: Decision, feedback: Feedback) -> None:
        as_context(decision.context, self.n_features, "decision.context")
        if decision.action is None or not 0 <= decision.action < self.n_actions:
            raise InvalidInput("decision.action", f"must be in [0, {self.n_actions - 1}]")
        if feedback.loss is None:
            raise InvalidInput("feedback", "uniform random needs a single 'loss'")
        check_loss(feedback.loss, (0.0, 1.0))

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        self.check(decision, feedback)
        self._count_feedback(feedback)
        return False

    def predict(self, contexts: FloatArray) -> FloatArray:
        n = int(np.asarray(contexts).shape[0])
        rng = np.random.default_rng([self.seed, self._n_decisions])
        return np.asarray(rng.integers(0, self.n_actions, size=n), dtype=np.float64)

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        return {}, {"config": self.config(), "version": 0, **self._counter_state()}

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        self._load_counter_state(meta)
