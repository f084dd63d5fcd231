"""The learner contract: ``act(context) -> Decision`` and ``learn(decision, feedback)``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.learners.records import Decision, Feedback
from banditree.models.tree_ops import FloatArray

Tensors = dict[str, np.ndarray]


class Learner(ABC):
    """A bandit policy that decides and learns online.

    Public methods do the shared bookkeeping; subclasses write the hooks.
    ``state()`` / ``from_state()`` round-trip everything needed to resume: the
    restored learner makes the same next decisions and the same next updates.
    """

    task: str
    n_features: int
    n_actions: int

    @abstractmethod
    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        """Decide for one context; the decision carries its propensity and model version."""

    @abstractmethod
    def check(self, decision: Decision, feedback: Feedback) -> None:
        """Raise :class:`~banditree.learners.InvalidInput` when ``learn`` would refuse this feedback.

        Callers that apply feedback later (the service) call this first, so that a bad
        request is refused at once and an accepted one is never lost.
        """

    @abstractmethod
    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Learn from the feedback of a stored decision; True when the parameters changed."""

    @abstractmethod
    def predict(self, contexts: FloatArray) -> FloatArray:
        """Greedy actions (classification) or values (regression) for a batch ``(B, d)``."""

    @property
    @abstractmethod
    def version(self) -> int:
        """Number of parameter updates applied so far."""

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """The JSON-ready configuration :func:`banditree.learners.build_learner` rebuilds from."""

    @abstractmethod
    def state(self) -> tuple[Tensors, dict[str, Any]]:
        """Tensors and JSON metadata that restore this learner exactly."""

    @abstractmethod
    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        """Restore the state written by :meth:`state` into a learner of the same config."""

    def export_model(self) -> dict[str, Any]:
        """The served model as JSON (the hard tree for tree models)."""
        return {"kind": "none"}

    @property
    def counters(self) -> dict[str, float]:
        return {}
