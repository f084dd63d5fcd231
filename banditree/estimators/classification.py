"""Eq. 8: importance-weighted gradient of the squared error of the sigmoid reward.

With ``max_importance_weight`` set, the weight ``1 / p(y)`` is truncated at that value
(truncated importance sampling): biased, but the rare explored actions of a large
action set (``p = epsilon / K``, a weight of 87 for Letter's 26 classes) no longer
swamp RMSprop's running second moment.  ``None`` is the paper's exact eq. 8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.estimators.base import Estimator

if TYPE_CHECKING:  # records import the learners package, which imports estimators
    from banditree.core.records import Decision, Feedback


REWARD_LINKS = ("sigmoid", "identity")


def importance_weight(weight: float, cap: float | None, aware: bool = False) -> float:
    """The weight eq. 8 applies: ``1 / p``, truncated at ``cap``, or saturating smoothly.

    ``aware``: ``cap (1 - exp(-weight / cap))``, the importance-weight-aware update
    of Karampatziakis and Langford (2011) for the squared loss of a unit-norm feature
    at learning rate ``1 / (2 cap)``: the closed form of ``weight`` infinitesimal steps,
    which moves the prediction towards the target by at most the whole gap (it never
    overshoots, however large the weight), and equals ``weight`` to first order.
    """
    if cap is None:
        return weight
    if aware:
        return cap * -math.expm1(-weight / cap)
    return min(weight, cap)


def classification_gradient(
    logits: FloatArray,
    action: int,
    propensity: float,
    loss: float,
    max_importance_weight: float | None = None,
    link: str = "sigmoid",
    importance_aware: bool = False,
) -> FloatArray:
    """``g = 2 w (s - reward) s' e_y``: eq. 8 with ``reward = 1 - loss``.

    ``s`` is the predicted reward of the played action ``y``: ``sigmoid(logits[y])``
    (``s' = s (1 - s)``, the paper) or, with ``link="identity"``, ``logits[y]`` itself
    (``s' = 1``: plain least squares on the reward, Vowpal Wabbit's regression).
    ``w = 1 / p(y)``, or ``min(1 / p(y), max_importance_weight)`` when a cap is given.
    """
    g = np.zeros(logits.shape)
    g[action] = gradient_value(
        float(logits[action]), propensity, loss, max_importance_weight, link, importance_aware
    )
    return g


def gradient_value(
    o: float,
    propensity: float,
    loss: float,
    max_importance_weight: float | None,
    link: str,
    importance_aware: bool,
) -> float:
    """The one non-zero entry of :func:`classification_gradient`: ``o`` the played action's output."""
    weight = importance_weight(1.0 / propensity, max_importance_weight, importance_aware)
    if link == "identity":
        return 2.0 * weight * (o - (1.0 - loss))
    s = 1.0 / (1.0 + math.exp(-o))
    return 2.0 * weight * (loss - (1.0 - s)) * s * (1.0 - s)


class ClassificationEstimator(Estimator):
    """Bandit classification, eq. 8 (losses in ``[0, 1]``, reward = 1 - loss).

    Parameters
    ----------
    link
        ``sigmoid`` (the paper: predicted reward ``sigmoid(output)``) or ``identity``
        (the output is the predicted reward).
    max_importance_weight
        Truncate the importance weight ``1 / p(y)`` at this value (>= 1); ``None`` (the
        default here) is the exact, unbiased eq. 8.  Learners built from a
        :class:`~banditree.learners.LearnerConfig` use 3 by default.
    """

    name = "classification"
    task = "classification"

    def __init__(
        self,
        max_importance_weight: float | None = None,
        link: str = "sigmoid",
        importance_aware: bool = False,
    ) -> None:
        self.importance_aware = bool(importance_aware)
        if link not in REWARD_LINKS:
            raise ValueError(f"link must be one of {REWARD_LINKS}, got {link!r}")
        self.link = link
        if max_importance_weight is not None and not (
            math.isfinite(max_importance_weight) and max_importance_weight >= 1.0
        ):
            raise ValueError(f"max_importance_weight must be >= 1, got {max_importance_weight}")
        self.max_importance_weight = max_importance_weight

    def upstream(self, output: FloatArray, decision: Decision, feedback: Feedback) -> FloatArray:
        assert decision.action is not None and feedback.loss is not None
        return classification_gradient(
            output,
            decision.action,
            decision.propensity,
            feedback.loss,
            self.max_importance_weight,
            self.link,
            self.importance_aware,
        )

    def upstream_rows(
        self, outputs: FloatArray, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> FloatArray:
        """:meth:`upstream` of every row at once: one zero array and its played entries
        (the same numbers, a fraction of the calls)."""
        g = np.zeros(outputs.shape)
        rows = outputs.tolist()
        cap, link, aware = self.max_importance_weight, self.link, self.importance_aware
        for b, (decision, feedback) in enumerate(zip(decisions, feedbacks, strict=True)):
            action = decision.action
            assert action is not None and feedback.loss is not None
            g[b, action] = gradient_value(
                rows[b][action], decision.propensity, feedback.loss, cap, link, aware
            )
        return g
