"""The uniform-random baseline, with the learner interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.explore import event_uniforms
from banditree.learners.base import Learner, Tensors
from banditree.learners.records import Decision, Feedback
from banditree.learners.validation import InvalidInput, as_context, check_loss
from banditree.models.tree_ops import FloatArray


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
        self._n_decisions = 0
        self._n_learned = 0
        self._loss_sum = 0.0

    @property
    def version(self) -> int:
        return 0

    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        x = as_context(context, self.n_features)
        event_id = event_id if event_id is not None else f"{self.seed:x}-{self._n_decisions:x}"
        self._n_decisions += 1
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

    def check(self, decision: Decision, feedback: Feedback) -> None:
        as_context(decision.context, self.n_features, "decision.context")
        if decision.action is None or not 0 <= decision.action < self.n_actions:
            raise InvalidInput("decision.action", f"must be in [0, {self.n_actions - 1}]")
        if feedback.loss is None:
            raise InvalidInput("feedback", "uniform random needs a single 'loss'")
        check_loss(feedback.loss, (0.0, 1.0))

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        self.check(decision, feedback)
        assert feedback.loss is not None
        self._n_learned += 1
        self._loss_sum += feedback.loss
        return False

    def predict(self, contexts: FloatArray) -> FloatArray:
        n = int(np.asarray(contexts).shape[0])
        rng = np.random.default_rng([self.seed, self._n_decisions])
        return np.asarray(rng.integers(0, self.n_actions, size=n), dtype=np.float64)

    @property
    def counters(self) -> dict[str, float]:
        n = self._n_learned
        return {
            "decisions": self._n_decisions,
            "feedback": n,
            "updates": 0,
            "progressive_mean_loss": self._loss_sum / n if n else float("nan"),
        }

    def config(self) -> dict[str, Any]:
        return dict(self._config)

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        return {}, {
            "config": self.config(),
            "version": 0,
            "n_decisions": self._n_decisions,
            "n_learned": self._n_learned,
            "loss_sum": self._loss_sum,
        }

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        self._n_decisions = int(meta["n_decisions"])
        self._n_learned = int(meta["n_learned"])
        self._loss_sum = float(meta["loss_sum"])
