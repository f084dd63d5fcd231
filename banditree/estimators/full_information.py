"""Full information: the label is known, so the loss gradient is exact."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.estimators.base import Estimator

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.core.records import Decision, Feedback

REGRESSION_LOSSES = ("squared", "huber")


class FullInformationEstimator(Estimator):
    """Exact gradients for the supervised upper bound.

    Classification: every action's reward is known, ``1 - loss_matrix[label, k]``
    (the 0/1 loss by default: 1 for the label, 0 otherwise), and the gradient is that
    of ``sum_k (sigmoid(theta_k) - reward_k)^2`` (eq. 8 with ``p = 1`` on all actions).
    Regression: derivative of the squared or Huber loss (threshold ``huber_delta``) at
    the greedy prediction.  ``link``: as :class:`ClassificationEstimator`'s.
    """

    name = "full"

    def __init__(
        self,
        task: str,
        loss: str = "squared",
        huber_delta: float = 1.0,
        loss_matrix: FloatArray | None = None,
        link: str = "sigmoid",
    ) -> None:
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be classification or regression, got {task!r}")
        if loss not in REGRESSION_LOSSES:
            raise ValueError(f"loss must be one of {REGRESSION_LOSSES}, got {loss!r}")
        if link not in ("sigmoid", "identity"):
            raise ValueError(f"link must be sigmoid or identity, got {link!r}")
        self.link = link
        self.task = task
        self.loss = loss
        self.huber_delta = float(huber_delta)
        self.loss_matrix = None if loss_matrix is None else np.asarray(loss_matrix, np.float64)

    def check_feedback(self, decision: Decision, feedback: Feedback) -> None:
        if feedback.label is None:
            raise ValueError("full-information feedback needs the 'label'")

    def magnitude(self, loss: float) -> float:
        if self.task == "classification":
            return 2.0  # |2 (s - reward)|, whatever the label
        # the residual of a squared loss of ``loss`` (Huber's gradient stops at its threshold)
        r = math.sqrt(max(float(loss), 0.0))
        return 2.0 * r if self.loss == "squared" else min(r, self.huber_delta)

    def upstream(self, output: FloatArray, decision: Decision, feedback: Feedback) -> FloatArray:
        assert feedback.label is not None
        if self.task == "classification":
            if self.loss_matrix is None:
                reward = np.zeros_like(output)
                reward[int(feedback.label)] = 1.0
            else:
                reward = 1.0 - self.loss_matrix[int(feedback.label)]
            if self.link == "identity":
                g: FloatArray = 2.0 * (output - reward)
                return g
            s = 1.0 / (1.0 + np.exp(-output))
            g = 2.0 * (s - reward) * s * (1.0 - s)
            return g
        r = float(output[0]) - feedback.label
        if self.loss == "squared":
            return np.array([2.0 * r])
        return np.array([float(np.clip(r, -self.huber_delta, self.huber_delta))])
