"""Eq. 10: the two-point (Shamir) estimate of the loss derivative."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.estimators.base import Estimator

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.core.records import Decision, Feedback


class TwoPointEstimator(Estimator):
    """Query the loss at ``y_hat + delta`` and ``y_hat - delta``; ``g = (l+ - l-) / (2 delta)``."""

    name = "two_point"
    task = "regression"

    def __init__(self, delta: float = 0.5) -> None:
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(f"delta must be > 0, got {delta}")
        self.delta = float(delta)

    def check_feedback(self, decision: Decision, feedback: Feedback) -> None:
        if feedback.losses is None:
            raise ValueError(
                "two_point feedback needs 'losses': [loss at probes[0], loss at probes[1]]"
            )

    def magnitude(self, loss: float) -> float:
        return float(loss) / (2.0 * self.delta)  # one loss at the bound, the other 0

    def upstream(self, output: FloatArray, decision: Decision, feedback: Feedback) -> FloatArray:
        assert feedback.losses is not None
        l_plus, l_minus = feedback.losses
        return np.array([(l_plus - l_minus) / (2.0 * self.delta)])
