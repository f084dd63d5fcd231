"""The estimator protocol."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.core.records import Decision, Feedback


class Estimator(ABC):
    """Turns a stored decision and its feedback into ``g = d loss / d output`` ``(K,)``.

    ``output`` is the model's raw output for the decision's context at the CURRENT
    parameters (leaf logits for classification, the prediction for regression).
    """

    name: str = "estimator"
    task: str = "classification"

    @abstractmethod
    def upstream(
        self, output: FloatArray, decision: Decision, feedback: Feedback
    ) -> FloatArray: ...

    def upstream_rows(
        self, outputs: FloatArray, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> FloatArray:
        """:meth:`upstream` of every row of ``outputs`` ``(B, K)``, as one ``(B, K)`` array
        (an estimator may do it in fewer array operations; the same numbers)."""
        return np.array(
            [self.upstream(o, d, f) for o, d, f in zip(outputs, decisions, feedbacks, strict=True)]
        )

    def magnitude(self, loss: float) -> float:
        """The size of the estimate ``|g|`` a feedback reporting losses up to ``loss`` gives
        (in the units :meth:`upstream` returns): the prior a fresh learner judges its first
        estimates against (:class:`~banditree.learners.robust.FeedbackClip`).  This
        default: the loss itself."""
        return float(loss)

    def check_feedback(self, decision: Decision, feedback: Feedback) -> None:
        """Raise ``ValueError`` when the feedback does not fit this estimator."""
        if feedback.loss is None:
            raise ValueError(f"{self.name} feedback needs a single 'loss'")
