"""A learner that infers its feature schema from the first context it learns from.

A config with ``features: "infer"`` (the default of a config that gives neither
``features`` nor ``n_features``) takes contexts as JSON objects of named features with
no declared schema.  The rule (the same as a ranking model's, :mod:`banditree.ranking`):

* the schema is fixed by the first decision **learned from**, in log order, by
  :func:`banditree.features.infer_schema` on its context alone (number -> numeric,
  bool -> boolean, string -> categorical, list -> tags, object -> namespace; a null
  value names no feature).  Every replica and every replay of the log learns the same
  decision first, so every one infers the same schema;
* until then the model decides as a fresh model of its config does for a context it
  cannot read yet (every context alike: with the default explorer, uniform over the
  actions); each context is checked as inference would check it, so a context that
  names no feature, has a bad value or would make the model too large is refused at
  once (:class:`~banditree.features.InvalidInput`, a 422 in the service);
* afterwards the model is built as the :class:`~banditree.learners.featured.FeaturedLearner`
  of that schema (its core and its feature stage): a name the schema does not know is ignored (declare a schema to have
  it), a value whose type contradicts the schema is refused naming the field.

The config stays ``"infer"`` (the model record never changes); the inferred schema is
learner state: in checkpoints (``meta["inferred_features"]``) and rebuilt by replay.

:class:`InferringLearner` is a :class:`~banditree.learners.composed.ComposedLearner` built
with a :class:`SchemaInference` part and, until the schema is fixed, its placeholder core.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from banditree.features import FeatureEncoder, InvalidInput, infer_schema
from banditree.learners.base import Learner
from banditree.learners.composed import ComposedLearner
from banditree.learners.config import LearnerConfig
from banditree.learners.featured import FeaturedLearner


class SchemaInference:
    """The part that fixes a schema from a context and builds the featured learner of it."""

    def __init__(self, config: LearnerConfig, build: Callable[[LearnerConfig], Learner]) -> None:
        self._config = config.model_dump(mode="json")
        self._build = build
        # what decides until the schema is known: the config's model on one blank column
        self.placeholder = build(config.model_copy(update={"features": None, "n_features": 1}))
        self._checked: tuple[str, LearnerConfig] | None = None  # the last schema checked

    def config_for(self, context: Mapping[str, Any], field: str) -> LearnerConfig:
        """The config of the model ``context`` would infer; refuses (naming ``field``) a
        context inference would refuse: no feature, a bad value, a model too large."""
        schema = infer_schema([context])
        FeatureEncoder(schema).encode(context, True, field)  # the values' checks
        key = repr(schema.to_json())
        if self._checked is not None and self._checked[0] == key:
            return self._checked[1]
        try:
            config = self._config_with(schema.to_json())
        except ValidationError as err:
            reason = err.errors()[0]["msg"].removeprefix("Value error, ")
            raise InvalidInput(
                field, f"its features make a model this config refuses: {reason}"
            ) from None
        self._checked = (key, config)
        return config

    def _config_with(self, features: dict[str, Any]) -> LearnerConfig:
        """This model's config with ``features`` (a schema's JSON) in place of "infer"."""
        body = {k: v for k, v in self._config.items() if k != "n_features"}
        return LearnerConfig.model_validate({**body, "features": features})

    def infer(self, context: Mapping[str, Any]) -> FeaturedLearner:
        """The featured learner of the schema ``context`` fixes."""
        featured = self._build(self.config_for(context, "decision.context"))
        assert isinstance(featured, FeaturedLearner)
        self._checked = None
        return featured

    def built(self, features: dict[str, Any]) -> FeaturedLearner:
        """The featured learner of a schema's JSON (a checkpoint's inferred schema)."""
        featured = self._build(self._config_with(features))
        assert isinstance(featured, FeaturedLearner)
        return featured


class InferringLearner(ComposedLearner):
    """A featured learner whose schema comes from the first decision learned."""

    def __init__(self, config: LearnerConfig, build: Callable[[LearnerConfig], Learner]) -> None:
        if not config.infers_features:
            raise ValueError("InferringLearner needs a config with features 'infer'")
        inference = SchemaInference(config, build)
        super().__init__(
            inference.placeholder,
            inference=inference,
            config=config.model_dump(mode="json"),
            seed=config.seed,
        )
