"""A policy that learns by gradient from bandit feedback (Algorithm 1, any model family).

The class is assembled from its seams: :mod:`.decide` (serving), :mod:`.learn`
(feedback to updates), :mod:`.state` (checkpoints) and :mod:`.introspect` (a context's
path, the leaves' probabilities), over the shared attributes of
:mod:`.base`.
"""

from __future__ import annotations

import copy
import math
from typing import Any, cast

import numpy as np

from banditree.estimators import Estimator
from banditree.explore import EpsilonGreedy, Explorer
from banditree.kernel import native
from banditree.learners.drift import LossRiseDetector
from banditree.learners.gradient_bandit.decide import Deciding
from banditree.learners.gradient_bandit.introspect import Introspecting
from banditree.learners.gradient_bandit.learn import EAGER_ROUNDS, RIDGE_FITTED, Learning
from banditree.learners.gradient_bandit.state import Checkpointing
from banditree.learners.leaf_stats import LeafStats
from banditree.learners.optim import RMSprop
from banditree.learners.ridge import PerActionRidge
from banditree.learners.ridge_challenger import RidgeChallenger
from banditree.learners.robust import FeedbackClip, prior_magnitude
from banditree.learners.standardize import RunningStandardizer
from banditree.models.spec import ModelSpec

__all__ = ["EAGER_ROUNDS", "GradientBandit"]


class GradientBandit(Deciding, Learning, Checkpointing, Introspecting):
    """Online standardisation + model + explorer + estimator + RMSprop, with accumulation.

    Parameters
    ----------
    model
        The model family (:class:`~banditree.models.spec.ModelSpec`).
    estimator
        Classification (eq. 8), one-point (eq. 9), two-point (eq. 10) or full information.
    explorer
        Classification only: scores (predicted rewards) and rounds learned -> pmf.
    reward_link
        Classification: predicted reward ``sigmoid(output)`` or the output itself.
    learning_rate, accumulate, l1, l2
        RMSprop step size; gradients are summed over ``accumulate`` rounds per update.
    learning_rate_decay
        Rounds ``T``: each update steps ``learning_rate / (1 + t / T)``, ``t`` the rounds
        learned (``None``: a constant step), never below ``learning_rate_floor`` times
        ``learning_rate``.
    standardize
        Standardise contexts with running statistics (updated as feedback is learned).
    loss_bounds
        Accepted loss range; classification losses must lie in ``[0, 1]`` (eq. 8).
    target_offset, target_scale
        Regression: the played value is ``target_offset + target_scale * output``.
    seed
        Seeds parameter initialisation, event ids, sampling and bagging.
    ridge
        Classification with a model whose ``bias`` and ``linear`` parameters are the
        per-action intercept and linear term: fit them by online ridge regression of
        the played reward (:class:`PerActionRidge`) instead of by gradient; the rest
        of the model learns the residual by gradient.
    context_clip
        Clip standardised contexts to ``[-context_clip, context_clip]`` (every use:
        decisions, predictions and learning), so a rare extreme value cannot swing
        the linear term.
    gradient_clip
        Clip each feedback's gradient estimate to this multiple of the running mean
        magnitude of the estimates before it, and refuse a non-finite one
        (:class:`~banditree.learners.robust.FeedbackClip`); ``None``: unclipped.
    drift_detector
        Classification: a change detector fed each feedback's loss; a signal restarts
        the ridge and the explorer's schedule (:meth:`Learning._on_drift`).
    ridge_challenger
        With the ridge and the detector: after each signal a fresh ridge challenges the
        served one for a while (:class:`~banditree.learners.ridge_challenger.RidgeChallenger`,
        this many rounds a challenger); ``None``: off.
    leaf_shrink
        With the detector: a signal multiplies the tree's leaf values (``theta``) by
        this; 1: kept.

    Decisions read an immutable snapshot that is replaced whole after each update,
    so a reader never sees a half-applied update.
    """

    def __init__(
        self,
        model: ModelSpec,
        estimator: Estimator,
        *,
        explorer: Explorer | None = None,
        reward_link: str = "sigmoid",
        learning_rate: float = 1e-2,
        learning_rate_decay: float | None = None,
        learning_rate_floor: float = 0.0,
        accumulate: int = 4,
        l1: float = 0.0,
        l2: float = 0.0,
        standardize: bool = True,
        loss_bounds: tuple[float, float] | None = None,
        target_offset: float = 0.0,
        target_scale: float = 1.0,
        seed: int = 0,
        config: dict[str, Any] | None = None,
        ridge: PerActionRidge | None = None,
        context_clip: float | None = None,
        gradient_clip: float | None = None,
        drift_detector: LossRiseDetector | None = None,
        ridge_challenger: int | None = None,
        leaf_shrink: float = 1.0,
    ) -> None:
        # raises KernelUnavailable when the compiled kernel was asked for and is missing
        self._native = native() is not None
        self.task = estimator.task
        if self.task == "classification":
            explorer = explorer if explorer is not None else cast(Explorer, EpsilonGreedy(0.3))
            loss_bounds = loss_bounds if loss_bounds is not None else (0.0, 1.0)
        elif model.n_outputs != 1:
            raise ValueError(f"regression needs a model with 1 output, got {model.n_outputs}")
        if not (isinstance(accumulate, int) and accumulate >= 1):
            raise ValueError(f"accumulate must be an integer >= 1, got {accumulate!r}")
        if not (math.isfinite(target_scale) and target_scale > 0):
            raise ValueError(f"target_scale must be > 0, got {target_scale}")
        if learning_rate_decay is not None and not (
            math.isfinite(learning_rate_decay) and learning_rate_decay > 0
        ):
            raise ValueError(f"learning_rate_decay must be > 0, got {learning_rate_decay}")
        self.learning_rate = float(learning_rate)
        self.learning_rate_decay = learning_rate_decay
        if not 0.0 <= learning_rate_floor <= 1.0:
            raise ValueError(f"learning_rate_floor must be in [0, 1], got {learning_rate_floor}")
        self.learning_rate_floor = float(learning_rate_floor)
        self.model = model
        self.estimator = estimator
        self.explorer = explorer
        if reward_link not in ("sigmoid", "identity"):
            raise ValueError(f"reward_link must be sigmoid or identity, got {reward_link!r}")
        self.reward_link = reward_link
        self.accumulate = accumulate
        self.standardize = standardize
        self.loss_bounds = loss_bounds
        self.target_offset = float(target_offset)
        self.target_scale = float(target_scale)
        self.seed = int(seed)
        self.n_features = model.n_features
        self.n_actions = model.n_outputs if self.task == "classification" else 0
        self._config = dict(config or {})
        self._rng = np.random.default_rng(self.seed)
        self._optimizer = RMSprop(
            lr=learning_rate,
            l1=l1,
            l2=l2,
            regularised=model.regularised,
            lr_scales=model.lr_scales,
            summed=model.summed,
        )
        self._params = model.init_params(self._rng)
        self._ridge = ridge
        if context_clip is not None and not (math.isfinite(context_clip) and context_clip > 0):
            raise ValueError(f"context_clip must be > 0, got {context_clip}")
        self.context_clip = context_clip
        if ridge is not None:
            if self.task != "classification" or not {"bias", "linear"} <= set(self._params):
                raise ValueError("ridge needs a classification model with bias and linear")
            # their gradients would be dropped: the model may leave them out (a copy of
            # the spec, which the caller may share with a learner without a ridge)
            self.model = model = copy.copy(model)
            model.fitted_elsewhere = RIDGE_FITTED
            self._serve_ridge(self._params)
        self._standardizer = RunningStandardizer(self.n_features)
        self._input_rows = []
        self._clip = (
            FeedbackClip(gradient_clip, prior_magnitude(estimator, loss_bounds, target_scale))
            if gradient_clip is not None
            else None
        )
        self._refused = 0
        self._detector = drift_detector
        self._challenger = (
            RidgeChallenger(ridge, ridge_challenger)
            if ridge is not None and drift_detector is not None and ridge_challenger
            else None
        )
        if not 0.0 <= leaf_shrink <= 1.0:
            raise ValueError(f"leaf_shrink must be in [0, 1], got {leaf_shrink}")
        self.leaf_shrink = float(leaf_shrink)
        self._explore_origin = 0
        layout = model.leaf_layout()
        self._leaf_stats = None if layout is None else LeafStats(*layout, self.n_actions)
        self._accum = {}
        self._accum_finite = True
        self._buffer = []
        self._pending = 0
        self._snapshot = self._make_snapshot(0)
