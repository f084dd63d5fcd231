"""Learner configuration: one validated record that builds any learner.

The record is flat (its stored form, the HTTP body and its attributes name each field
directly) but defined in sections (:data:`SECTIONS`); the bounds keep one configuration
from exhausting memory.  Defaults that depend on other fields are resolved by
:mod:`banditree.learners.config.defaults`; why they are what they are:
``docs/explanation/defaults.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, model_validator

from banditree.features import FeatureSchema
from banditree.learners.config import defaults, rules
from banditree.learners.config.sections import (
    ExplorationSection,
    LinearTermSection,
    ModelSection,
    Section,
)
from banditree.learners.config.sections_learning import EstimationSection, OptimisationSection
from banditree.learners.ranking_options import RankingOptions

#: The sections in the order the reference lists them (title -> fields).
SECTIONS: dict[str, type[Section]] = {
    "model": ModelSection,
    "exploration": ExplorationSection,
    "estimation": EstimationSection,
    "optimisation": OptimisationSection,
    "linear term": LinearTermSection,
}


# pydantic collects the fields of the bases last-first: the model section's come first
class LearnerConfig(
    LinearTermSection, OptimisationSection, EstimationSection, ExplorationSection, ModelSection
):
    """Everything needed to build (and rebuild) a learner: the fields of every section.

    Defaults are the paper's bandit defaults except where ``benchmarks/quality/bandit_vs_vw.py``
    and ``benchmarks/quality/bandit_regression.py`` measured better ones (the figures:
    ``docs/explanation/defaults.md``).  ``kind`` and ``n_trees`` default by ``task``; a
    config that names them keeps them.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _feature_width(cls, data: Any) -> Any:
        return defaults.feature_width(data)

    @property
    def feature_schema(self) -> FeatureSchema | None:
        """The parsed ``features`` schema, or None for float-list contexts (and while a
        model that infers its schema has none)."""
        if self.features is None or self.features == defaults.INFER:
            return None
        return FeatureSchema.model_validate(self.features)

    @property
    def infers_features(self) -> bool:
        """Whether the schema is inferred from the first context learned from."""
        return self.features == defaults.INFER

    @model_validator(mode="after")
    def _check(self) -> LearnerConfig:
        rules.check(self)
        return self

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> LearnerConfig:
        """A config persisted by any version (a model record, a checkpoint's meta).

        A stored config holds every field of its version, null for a default.  Fields
        added since are filled from :data:`~.defaults.STORED_FILLS`, the values that keep
        the stored model's behaviour where their default would change it.  A ranking
        model stored with ``kind: boosted`` (accepted, and ignored, before the rules
        refused it) loads with the ranking default's kind.
        """
        if data.get("task") == "ranking" and data.get("kind") == "boosted":
            # accepted before the rule refused it; a ranking model never read its kind
            data = {**data, "kind": defaults.default_kind("ranking")}
        return cls.model_validate({**defaults.STORED_FILLS, **data})

    def ranking_options(self) -> RankingOptions:
        """The validated ``options`` of a ranking model (``task: ranking``)."""
        return rules.ranking_options(self)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field, JSON types (what :meth:`from_stored` loads)."""
        return self.model_dump(mode="json")

    def section(self, name: str) -> dict[str, Any]:
        """The fields of one section of :data:`SECTIONS` and their values."""
        return self.model_dump(include=set(SECTIONS[name].model_fields))

    def for_initial_model(self, features: dict[str, Any] | None = None) -> LearnerConfig:
        """This configuration as a warm start from a trained tree builds it.

        A config that names no ``kind`` gets :data:`~.defaults.INITIAL_MODEL_KIND` (the
        regression default is a forest); fields it leaves unset take
        :data:`~.defaults.INITIAL_MODEL_FILLS`.  ``features`` (the schema of a tree
        trained on named features) replaces ``features: "infer"``: the model's features
        are the file's.
        """
        config = self
        if features is not None and self.infers_features:
            given = self.model_dump(include=self.model_fields_set - {"n_features"})
            config = LearnerConfig.model_validate({**given, "features": features})
        if "kind" not in config.model_fields_set:
            given = config.model_dump(include=config.model_fields_set)
            config = LearnerConfig.model_validate({**given, "kind": defaults.INITIAL_MODEL_KIND})
        fills = defaults.INITIAL_MODEL_FILLS
        return config.model_copy(
            update={k: v for k, v in fills.items() if getattr(config, k) is None}
        )

    @property
    def resolved_height(self) -> int:
        return defaults.height(self)

    @property
    def resolved_linear_term(self) -> bool:
        return defaults.linear_term(self)

    @property
    def uses_ridge(self) -> bool:
        return defaults.uses_ridge(self)

    @property
    def resolved_context_clip(self) -> float | None:
        return defaults.context_clip(self)

    @property
    def resolved_linear_learning_rate(self) -> float:
        return defaults.linear_learning_rate(self)

    @property
    def resolved_learning_rate(self) -> float:
        return defaults.learning_rate(self)

    @property
    def resolved_bagging(self) -> bool:
        return defaults.bagging(self)

    @property
    def resolved_learning_rate_decay(self) -> float | None:
        return defaults.learning_rate_decay(self)

    @property
    def resolved_learning_rate_floor(self) -> float:
        return defaults.learning_rate_floor(self)

    @property
    def resolved_drift_threshold(self) -> float | None:
        return defaults.drift_threshold(self)

    @property
    def resolved_drift_challenger(self) -> int | None:
        return defaults.drift_challenger(self)

    @property
    def resolved_drift_jump_threshold(self) -> float | None:
        return defaults.drift_jump_threshold(self)

    @property
    def resolved_drift_leaf_shrink(self) -> float:
        return defaults.drift_leaf_shrink(self)

    @property
    def resolved_gradient_clip(self) -> float | None:
        return defaults.gradient_clip(self)

    @property
    def n_outputs(self) -> int:
        return defaults.n_outputs(self)

    def parameter_count(self) -> int:
        """Rough parameter count (used for the memory bound)."""
        return defaults.parameter_count(self)
