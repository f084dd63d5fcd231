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
* afterwards the model is the :class:`~banditree.learners.featured.FeaturedLearner`
  of that schema: a name the schema does not know is ignored (declare a schema to have
  it), a value whose type contradicts the schema is refused naming the field.

The config stays ``"infer"`` (the model record never changes); the inferred schema is
learner state: in checkpoints (``meta["inferred_features"]``) and rebuilt by replay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput, infer_schema
from banditree.learners.base import Explainer, Learner, Tensors
from banditree.learners.config import LearnerConfig
from banditree.learners.featured import FeaturedLearner, _as_list, _as_mapping, _with_context

#: the one column the placeholder model reads before the schema is inferred
_BLANK = (0.0,)


class InferringLearner(Learner):
    """A :class:`FeaturedLearner` whose schema comes from the first decision learned."""

    def __init__(self, config: LearnerConfig, build: Callable[[LearnerConfig], Learner]) -> None:
        if not config.infers_features:
            raise ValueError("InferringLearner needs a config with features 'infer'")
        self._config = config.model_dump(mode="json")
        self._build = build
        # what decides until the schema is known: the config's model on one blank column
        self.placeholder = build(config.model_copy(update={"features": None, "n_features": 1}))
        self.task, self.n_actions, self.seed = (
            self.placeholder.task,
            self.placeholder.n_actions,
            config.seed,
        )
        self.n_features = 1
        self.featured: FeaturedLearner | None = None
        self._checked: tuple[str, LearnerConfig] | None = None  # the last schema checked

    # -- the schema -------------------------------------------------------------------
    @property
    def schema(self) -> FeatureSchema | None:
        """The inferred schema, or None before the first decision learned from."""
        return None if self.featured is None else self.featured.schema

    def _config_for(self, context: Mapping[str, Any], field: str) -> LearnerConfig:
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

    def _infer(self, context: Mapping[str, Any]) -> FeaturedLearner:
        featured = self._build(self._config_for(context, "decision.context"))
        assert isinstance(featured, FeaturedLearner)
        self.featured = featured
        self._checked = None
        return featured

    # -- deciding ---------------------------------------------------------------------
    def act(self, context: Any, event_id: str | None = None) -> Decision:
        ctx = _as_mapping(context, "context")
        if self.featured is None:
            self._config_for(ctx, "context")
        eid = self._next_event_id(event_id)
        if self.featured is not None:
            return self.featured.act(ctx, eid)
        return _with_context(self.placeholder.act(_BLANK, eid), context)

    def act_columns(  # type: ignore[override]
        self, contexts: Sequence[Any], event_ids: Sequence[str | None] | None = None
    ) -> DecisionColumns:
        raw = _as_list(contexts)
        if self.featured is None:
            for i, c in enumerate(raw):
                self._config_for(_as_mapping(c, f"contexts[{i}]"), f"contexts[{i}]")
        ids: list[str | None] = list(self._next_event_ids(event_ids, len(raw)))
        if self.featured is not None:
            return self.featured.act_columns(raw, ids)
        blank = np.zeros((len(raw), 1))
        return dataclasses.replace(self.placeholder.act_columns(blank, ids), contexts=raw)

    def act_batch(  # type: ignore[override]
        self, contexts: Sequence[Any], event_ids: Sequence[str | None] | None = None
    ) -> list[Decision]:
        return self.act_columns(contexts, event_ids).rows()

    def predict(self, contexts: Any) -> np.ndarray:
        raw = _as_list(contexts)
        if self.featured is not None:
            return self.featured.predict(raw)
        for i, c in enumerate(raw):
            self._config_for(_as_mapping(c, f"contexts[{i}]"), f"contexts[{i}]")
        return self.placeholder.predict(np.zeros((len(raw), 1)))

    def action_probabilities(self, context: Mapping[str, Any]) -> np.ndarray:
        """Classification: the probability ``act`` plays each action for ``context``."""
        if self.featured is not None:
            return self.featured.action_probabilities(context)
        self._config_for(_as_mapping(context, "context"), "context")
        probabilities = getattr(self.placeholder, "action_probabilities", None)
        if probabilities is None:
            raise ValueError("action_probabilities is for classification learners")
        result: np.ndarray = probabilities(_BLANK)
        return result

    @property
    def explainer(self) -> Explainer:
        """Itself: its contexts are named features."""
        return self

    def explain(self, context: Mapping[str, Any]) -> list[str]:
        """:meth:`FeaturedLearner.explain` once the schema is inferred."""
        if self.featured is None:
            raise InvalidInput(
                "explain", "the model has no schema yet: it is inferred at the first feedback"
            )
        return self.featured.explain(context)

    # -- learning ---------------------------------------------------------------------
    def check(self, decision: Decision, feedback: Feedback) -> None:
        if self.featured is not None:
            self.featured.check(decision, feedback)
            return
        self._config_for(_as_mapping(decision.context, "decision.context"), "decision.context")
        self.placeholder.check(_with_context(decision, _BLANK), feedback)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """The first decision learned from fixes the schema; then the featured model learns."""
        featured = self.featured
        if featured is None:
            self.check(decision, feedback)
            featured = self._infer(_as_mapping(decision.context, "decision.context"))
        return featured.learn(decision, feedback)

    def note_unanswered(self, decision: Decision) -> None:
        """Counted by the featured model once the schema is inferred (before it, the
        model has no tree to count at)."""
        if self.featured is not None:
            self.featured.note_unanswered(decision)

    def leaf_stats(self) -> dict[str, Any] | None:
        return None if self.featured is None else self.featured.leaf_stats()

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        return None if self.featured is None else self.featured.leaf_probabilities()

    def drift_events(self) -> list[dict[str, Any]]:
        return [] if self.featured is None else self.featured.drift_events()

    def trace(self, context: Any) -> dict[str, Any]:
        if self.featured is None:
            raise InvalidInput(
                "context", "the model has no schema yet: it is inferred at the first feedback"
            )
        return self.featured.trace(context)

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """Pair by pair until a decision learned fixes the schema, then the rest through
        the featured model's :meth:`FeaturedLearner.learn_batch` (the same state)."""
        n = len(decisions)
        if n != len(feedbacks):
            return super().learn_batch(decisions, feedbacks)
        out: list[bool | ValueError | KeyError | TypeError] = []
        while self.featured is None and len(out) < n:
            i = len(out)
            out += super().learn_batch(decisions[i : i + 1], feedbacks[i : i + 1])
        if self.featured is not None and len(out) < n:
            out += self.featured.learn_batch(decisions[len(out) :], feedbacks[len(out) :])
        return out

    # -- state ------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return 0 if self.featured is None else self.featured.version

    @property
    def counters(self) -> dict[str, float]:
        base = super().counters if self.featured is None else self.featured.counters
        return {**base, "decisions": self._n_decisions}

    def export_model(self) -> dict[str, Any]:
        if self.featured is None:
            return {"kind": "none", "features": "infer"}
        return self.featured.export_model()

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors: Tensors = {}
        meta: dict[str, Any] = {"inferred_features": None}
        if self.featured is not None:
            tensors, meta = self.featured.state()
            meta = {**meta, "inferred_features": self.featured.schema.to_json()}
        return tensors, {
            **meta,
            "config": self.config(),
            "n_inferring_decisions": self._n_decisions,
        }

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        if "inferred_features" not in meta:
            raise ValueError("checkpoint holds no inferred schema state")
        self._n_decisions = int(meta["n_inferring_decisions"])
        self.featured = None
        if meta["inferred_features"] is not None:
            featured = self._build(self._config_with(meta["inferred_features"]))
            assert isinstance(featured, FeaturedLearner)
            featured.load_state(tensors, {**meta, "config": featured.config()})
            self.featured = featured
