"""Eq. 9: the one-point (Flaxman et al.) estimate of the loss derivative."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.estimators.base import Estimator

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.core.records import Decision, Feedback


class OnePointEstimator(Estimator):
    """Play ``y_hat + delta u`` with ``u`` uniform in ``{-1, +1}``; ``g = loss u / delta``.

    In expectation over ``u`` this is the derivative of the loss smoothed over
    ``[y_hat - delta, y_hat + delta]`` (two-point symmetric difference).
    """

    name = "one_point"
    task = "regression"

    def __init__(self, delta: float = 0.5) -> None:
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(f"delta must be > 0, got {delta}")
        self.delta = float(delta)

    def magnitude(self, loss: float) -> float:
        return float(loss) / self.delta

    def upstream(self, output: FloatArray, decision: Decision, feedback: Feedback) -> FloatArray:
        assert feedback.loss is not None
        return np.array([feedback.loss * decision.perturbation / self.delta])
