"""The one registry of model families: a kind's name -> a builder from a learner config.

The families the library ships register here, explicitly (no module is loaded back by
name); a family outside the library calls :func:`register_model` before it is used.
The models themselves know nothing of learner configs: a builder reads the config's
fields and passes them on.
"""

from __future__ import annotations

from collections.abc import Callable

from banditree.learners.config import LearnerConfig
from banditree.models.dgt.forest_spec import DGTForestSpec
from banditree.models.dgt.spec import DGTSpec
from banditree.models.hinge.spec import HingeSpec
from banditree.models.linear import LinearSpec
from banditree.models.spec import ModelSpec
from banditree.models.tel.spec import tel_from_options

ModelBuilder = Callable[[LearnerConfig], ModelSpec]
MODEL_BUILDERS: dict[str, ModelBuilder] = {}


def register_model(kind: str) -> Callable[[ModelBuilder], ModelBuilder]:
    """Decorator registering a model family under ``kind`` for ``build_learner``."""

    def wrap(builder: ModelBuilder) -> ModelBuilder:
        MODEL_BUILDERS[kind] = builder
        return builder

    return wrap


def _linear_lr_scale(c: LearnerConfig) -> float:
    """The linear term's (and shared bias's) step as a factor on the tree's."""
    if not c.resolved_linear_term:
        return 1.0
    return c.resolved_linear_learning_rate / c.resolved_learning_rate


@register_model("dgt")
def _dgt(c: LearnerConfig) -> ModelSpec:
    return DGTSpec(
        c.n_features,
        c.n_outputs,
        c.resolved_height,
        c.hidden,
        c.shared_bias,
        c.resolved_linear_term,
        _linear_lr_scale(c),
    )


@register_model("dgt_forest")
def _dgt_forest(c: LearnerConfig) -> ModelSpec:
    return DGTForestSpec(
        c.n_features,
        c.n_outputs,
        c.resolved_height,
        c.n_trees,
        c.aggregate,
        c.hidden,
        c.shared_bias,
        c.resolved_linear_term,
        _linear_lr_scale(c),
        bagging=c.resolved_bagging,
    )


@register_model("linear")
def _linear(c: LearnerConfig) -> ModelSpec:
    return LinearSpec(c.n_features, c.n_outputs)


@register_model("tel")
def _tel(c: LearnerConfig) -> ModelSpec:
    """TEL: ``height`` is the depth, ``options["gamma"]`` the smooth-step width."""
    return tel_from_options(c.n_features, c.n_outputs, c.resolved_height, c.n_trees, c.options)


@register_model("hinge")
def _hinge(c: LearnerConfig) -> ModelSpec:
    return HingeSpec.from_options(
        c.n_features, c.n_outputs, c.n_trees, c.resolved_height, c.options
    )


#: kinds that are learners of their own, built by the factory rather than from a model
#: spec: the uniform baseline and the refitted boosted ensemble
LEARNER_KINDS = ("boosted", "random")


def known_kinds() -> list[str]:
    """Every registered kind, ``random`` (the uniform baseline) and ``boosted``."""
    return sorted([*MODEL_BUILDERS, *LEARNER_KINDS])
