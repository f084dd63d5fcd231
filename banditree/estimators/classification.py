"""Eq. 8: importance-weighted gradient of the squared error of the sigmoid reward."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from banditree.estimators.base import Estimator
from banditree.models.tree_ops import FloatArray

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.learners.records import Decision, Feedback


def classification_gradient(
    logits: FloatArray, action: int, propensity: float, loss: float
) -> FloatArray:
    """``g = 2/p(y) (loss - (1 - s)) s (1 - s) e_y`` with ``s = sigmoid(logits[y])``.

    This is the gradient of ``(s - reward)^2 / p(y)`` with ``reward = 1 - loss``.
    """
    s = 1.0 / (1.0 + math.exp(-float(logits[action])))
    g = np.zeros(logits.shape)
    g[action] = 2.0 / propensity * (loss - (1.0 - s)) * s * (1.0 - s)
    return g


class ClassificationEstimator(Estimator):
    """Bandit classification, eq. 8 (losses in ``[0, 1]``, reward = 1 - loss)."""

    name = "classification"
    task = "classification"

    def upstream(self, output: FloatArray, decision: Decision, feedback: Feedback) -> FloatArray:
        assert decision.action is not None and feedback.loss is not None
        return classification_gradient(output, decision.action, decision.propensity, feedback.loss)
