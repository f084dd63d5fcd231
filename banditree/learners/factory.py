"""Build learners from a :class:`LearnerConfig` (model families: :mod:`.families`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from banditree.estimators import (
    ClassificationEstimator,
    Estimator,
    FullInformationEstimator,
    OnePointEstimator,
    TwoPointEstimator,
)
from banditree.explore import make_explorer
from banditree.learners.apprentice import Apprentice
from banditree.learners.base import Learner, Tensors
from banditree.learners.boosted import build_boosted, stage_codes
from banditree.learners.config import LearnerConfig
from banditree.learners.drift import LossRiseDetector
from banditree.learners.families import MODEL_BUILDERS, known_kinds
from banditree.learners.featured import FeaturedLearner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.inferring import InferringLearner
from banditree.learners.ridge import PerActionRidge
from banditree.learners.uniform import UniformRandom
from banditree.learners.warm_start import warm_start
from banditree.models.dgt.trained import TrainedTree
from banditree.models.spec import reward_prior

#: builders of the tasks whose learners live above this layer (``ranking``:
#: :mod:`banditree.ranking` registers itself when imported)
TASK_BUILDERS: dict[str, Callable[[LearnerConfig], Learner]] = {}


def register_task(task: str, builder: Callable[[LearnerConfig], Learner]) -> None:
    """Build the learners of ``task`` with ``builder`` (called by the task's package)."""
    TASK_BUILDERS[task] = builder


def make_estimator(c: LearnerConfig) -> Estimator:
    if c.estimator == "full":
        matrix = None if c.loss_matrix is None else np.asarray(c.loss_matrix, dtype=np.float64)
        return FullInformationEstimator(
            c.task, c.regression_loss, c.huber_delta, matrix, c.reward_link
        )
    if c.task == "classification":
        return ClassificationEstimator(c.max_importance_weight, c.reward_link, c.importance_aware)
    if c.estimator == "two_point":
        return TwoPointEstimator(c.delta)
    return OnePointEstimator(c.delta)


def build_learner(
    config: LearnerConfig | dict[str, Any], initial_model: Any | None = None
) -> Learner:
    """A fresh learner for ``config`` (a :class:`LearnerConfig` or its dict).

    ``initial_model`` (a ``banditree train`` model file's bytes or a
    :class:`~banditree.models.dgt.trained.TrainedTree`) warm-starts a ``dgt`` learner
    from the trained tree (:func:`banditree.learners.warm_start.warm_start`).
    """
    if initial_model is not None:
        if not isinstance(initial_model, TrainedTree):
            initial_model = TrainedTree.from_bytes(initial_model)
        c = config if isinstance(config, LearnerConfig) else LearnerConfig.model_validate(config)
        config = c.for_initial_model(initial_model.features)
    learner = _build_fresh(config)
    if initial_model is not None:
        warm_start(learner, initial_model)
    return learner


def _build_fresh(config: LearnerConfig | dict[str, Any]) -> Learner:
    c = config if isinstance(config, LearnerConfig) else LearnerConfig.model_validate(config)
    if c.task in TASK_BUILDERS:
        return TASK_BUILDERS[c.task](c)
    if c.task == "ranking":
        raise ValueError("task ranking needs banditree.ranking (import it first)")
    if c.infers_features:  # the schema comes from the first context learned from
        return InferringLearner(c, _build_fresh)
    schema = c.feature_schema
    if schema is not None:  # the encoder in front of a learner of the encoded width
        # the inner config names what the schema's config resolves (its ridge bound); a
        # boosted model's is its dgt starter's, resolved as a dgt config of this schema
        resolved = c.model_copy(update={"kind": "dgt"}) if c.kind == "boosted" else c
        linear_update = "ridge" if resolved.uses_ridge else c.linear_update
        inner_config = c.model_copy(update={"features": None, "linear_update": linear_update})
        inner: Learner
        codes = None
        if c.kind == "boosted":  # its category_codes read the schema
            codes = stage_codes(c, schema)
            if codes is not None:  # the stage's rows: the encoded columns, then the codes
                inner_config = inner_config.model_copy(update={"n_features": codes.out_width})
            inner = build_boosted(inner_config, _build_fresh, schema)
        else:
            inner = _build_fresh(inner_config)
        return FeaturedLearner(inner, schema, c.model_dump(mode="json"), codes)
    stored = c.model_dump(mode="json")
    if c.kind == "random":
        if c.task != "classification" or c.n_actions is None:
            raise ValueError("kind random is a classification baseline")
        return UniformRandom(c.n_features, c.n_actions, seed=c.seed, config=stored)
    if c.kind == "boosted":
        return build_boosted(c, _build_fresh)
    if c.kind not in MODEL_BUILDERS:
        raise ValueError(f"kind must be one of {known_kinds()}, got {c.kind!r}")
    model = MODEL_BUILDERS[c.kind](c)
    if c.task == "classification":
        model.output_bias = reward_prior(c.n_outputs, c.reward_link)
    threshold = c.resolved_drift_threshold
    bounds = (c.loss_min, c.loss_max) if c.loss_min is not None and c.loss_max is not None else None
    learner = GradientBandit(
        model,
        make_estimator(c),
        explorer=make_explorer(c.explorer, c.explorer_parameter, c.explorer_exponent)
        if c.task == "classification"
        else None,
        reward_link=c.reward_link,
        learning_rate=c.resolved_learning_rate,
        learning_rate_decay=c.resolved_learning_rate_decay,
        learning_rate_floor=c.resolved_learning_rate_floor,
        accumulate=c.accumulate,
        l1=c.l1,
        l2=c.l2,
        standardize=c.standardize,
        loss_bounds=bounds,
        target_offset=c.target_offset,
        target_scale=c.target_scale,
        seed=c.seed,
        config=stored,
        ridge=PerActionRidge(
            c.n_outputs, c.n_features, c.ridge_l2, model.output_bias, mix_rate=c.ridge_mix_rate
        )
        if c.uses_ridge
        else None,
        context_clip=c.resolved_context_clip,
        gradient_clip=c.resolved_gradient_clip,
        drift_detector=LossRiseDetector(threshold, jump_threshold=c.resolved_drift_jump_threshold)
        if threshold is not None
        else None,
        ridge_challenger=c.resolved_drift_challenger,
        leaf_shrink=c.resolved_drift_leaf_shrink,
    )
    return Apprentice(learner) if c.mode == "apprentice" else learner


def restore_learner(tensors: Tensors, meta: dict[str, Any]) -> Learner:
    """Rebuild a learner from :meth:`Learner.state` output."""
    learner = build_learner(LearnerConfig.from_stored(meta["config"]))
    learner.load_state(tensors, meta)
    return learner
