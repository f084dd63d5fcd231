"""A learner whose contexts are JSON objects of named features (a config with ``features``).

:class:`FeaturedLearner` encodes each context with its
:class:`~banditree.features.FeatureEncoder` and hands the vector to an inner learner
built for the encoded width.  Decisions keep the raw context, so feedback (and a
replay of the log) re-encodes it.  The encoder learns at learn time only, in log order,
and decisions read the view published with the inner learner's last update.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput
from banditree.features.export import FORMAT as NAMED_FORMAT
from banditree.features.export import ReferenceEvaluator, export_tree
from banditree.learners.base import Explainer, Learner, Tensors
from banditree.learners.gradient_bandit import GradientBandit

#: prefix of the encoder's tensors in a checkpoint
PREFIX = "features."
TREE_FORMAT = "banditree.hard_tree/v1"


class FeaturedLearner(Learner):
    """Feature encoding in front of any learner of width ``schema.width``."""

    def __init__(self, inner: Learner, schema: FeatureSchema, config: dict[str, Any]) -> None:
        if inner.n_features != schema.width:
            raise ValueError(f"inner learner reads {inner.n_features} columns, not {schema.width}")
        self.inner = inner
        self.encoder = FeatureEncoder(schema)
        self.task, self.n_actions, self.seed = inner.task, inner.n_actions, inner.seed
        self.n_features = inner.n_features
        self._config = dict(config)
        self._named: tuple[int, dict[str, Any]] | None = None  # export_model of a version

    @property
    def schema(self) -> FeatureSchema:
        return self.encoder.schema

    # -- deciding ----------------------------------------------------------------------
    def act(self, context: Any, event_id: str | None = None) -> Decision:
        x = self.encoder.encode(_as_mapping(context, "context"))
        return _with_context(self.inner.act(x, event_id), context)

    @property
    def batch_exact(self) -> bool:
        return self.inner.batch_exact

    # contexts are JSON objects here, not rows of floats
    def act_columns(  # type: ignore[override]
        self, contexts: Sequence[Any], event_ids: Sequence[str | None] | None = None
    ) -> DecisionColumns:
        raw = _as_list(contexts)
        columns = self.inner.act_columns(self._encode_many(raw), event_ids)
        return dataclasses.replace(columns, contexts=raw)

    def act_batch(  # type: ignore[override]
        self, contexts: Sequence[Any], event_ids: Sequence[str | None] | None = None
    ) -> list[Decision]:
        return self.act_columns(contexts, event_ids).rows()

    def predict(self, contexts: Any) -> np.ndarray:
        """Greedy actions / values for a list of JSON contexts."""
        return self.inner.predict(self._encode_many(_as_list(contexts)))

    def _encode_many(self, raw: list[Any]) -> np.ndarray:
        """The rows decisions read for a list of JSON contexts (each checked to be an object)."""
        return self.encoder.encode_many(
            [_as_mapping(c, f"contexts[{i}]") for i, c in enumerate(raw)]
        )

    def encode(self, context: Mapping[str, Any]) -> np.ndarray:
        """The vector decisions read for ``context`` (the published encoder view)."""
        return self.encoder.encode(_as_mapping(context, "context"))

    def reward_estimates(self, context: Mapping[str, Any]) -> np.ndarray:
        """The inner learner's predicted reward of every action for ``context``."""
        inner = self.inner
        if not isinstance(inner, GradientBandit):
            raise ValueError("reward_estimates is for gradient-learned models")
        return inner.reward_estimates(self.encode(context))

    def action_probabilities(self, context: Mapping[str, Any]) -> np.ndarray:
        """Classification: the probability ``act`` plays each action for ``context``."""
        probabilities = getattr(self.inner, "action_probabilities", None)
        if probabilities is None:
            raise ValueError("action_probabilities is for classification learners")
        result: np.ndarray = probabilities(self.encode(context))
        return result

    # -- learning ----------------------------------------------------------------------
    def _encoded(self, decision: Decision) -> Decision:
        context = _as_mapping(decision.context, "decision.context")
        x = self.encoder.encode(context, served=False, field="decision.context")
        return _with_context(decision, tuple(x.tolist()))

    def check(self, decision: Decision, feedback: Feedback) -> None:
        self.inner.check(self._encoded(decision), feedback)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Check, then learn the context into the encoder, then the inner learner learns."""
        self.check(decision, feedback)
        self.encoder.update(_as_mapping(decision.context, "decision.context"))
        before = self.inner.version
        changed = self.inner.learn(self._encoded(decision), feedback)
        if self.inner.version != before:
            self.encoder.publish()
        return changed

    def note_unanswered(self, decision: Decision) -> None:
        """The inner learner counts the decision, its context encoded as learning would
        (the encoder does not learn from it: it got no feedback)."""
        self.inner.note_unanswered(self._encoded(decision))

    def leaf_stats(self) -> dict[str, Any] | None:
        return self.inner.leaf_stats()

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        return self.inner.leaf_probabilities()

    def drift_events(self) -> list[dict[str, Any]]:
        return self.inner.drift_events()

    def trace(self, context: Any) -> dict[str, Any]:
        """The inner learner's trace of the encoded context, with the named path
        (:meth:`explain`) where the model is a single tree."""
        out = self.inner.trace(self.encode(_as_mapping(context, "context")))
        named = self.export_model().get("format") == NAMED_FORMAT
        out["explanation"] = self.explain(context) if named else None
        return out

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn` pair by pair, the inner learner's part in one ``learn_batch``.

        The encoder reads nothing of the inner learner, so it checks, learns and encodes
        every pair first, in order; then the inner learner learns the encoded pairs in
        one call, and decisions are shown the encoder as it stood after the pair whose
        update was the batch's last (what ``learn`` published): the same state.  An inner
        learner other than a gradient bandit (whose True is exactly a new version) goes
        pair by pair.
        """
        inner = self.inner
        if len(decisions) != len(feedbacks) or not isinstance(inner, GradientBandit):
            return super().learn_batch(decisions, feedbacks)
        out: list[bool | ValueError | KeyError | TypeError] = []
        encoded, learned, slots, views = [], [], [], []
        for decision, feedback in zip(decisions, feedbacks, strict=True):
            try:  # learn's steps before the inner learner's
                self.check(decision, feedback)
                self.encoder.update(_as_mapping(decision.context, "decision.context"))
                encoded.append(self._encoded(decision))
            except (ValueError, KeyError, TypeError) as err:
                out.append(err)
                continue
            learned.append(feedback)
            slots.append(len(out))
            views.append(self.encoder.view())
            out.append(False)
        results = inner.learn_batch(encoded, learned)
        for slot, result in zip(slots, results, strict=True):
            out[slot] = result
        last = [i for i, result in enumerate(results) if result is True]
        if last:
            self.encoder.publish(views[last[-1]])
        return out

    # -- state -------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.inner.version

    @property
    def counters(self) -> dict[str, float]:
        return self.inner.counters

    def export_model(self) -> dict[str, Any]:
        """A hard tree: the named document (:func:`banditree.features.export.export_tree`)
        that :class:`~banditree.features.export.ReferenceEvaluator` runs on raw contexts;
        another model: its own export with the schema and the column names."""
        version = self.inner.version
        if self._named is not None and self._named[0] == version:
            return self._named[1]
        exported = dict(self.inner.export_model())
        inner = self.inner
        if exported.get("format") == TREE_FORMAT and isinstance(inner, GradientBandit):
            mean, inv_scale, clip = inner.served_scaling()
            exported = export_tree(exported, self.encoder, mean, inv_scale, clip)
        exported["features"] = self.schema.to_json()
        exported["columns"] = self.encoder.columns()
        self._named = (version, exported)
        return exported

    @property
    def explainer(self) -> Explainer:
        """Itself: its contexts are named features."""
        return self

    def explain(self, context: Mapping[str, Any]) -> list[str]:
        """The served leaf's path for ``context`` as named conditions (a hard tree only)."""
        document = self.export_model()
        if document.get("format") != NAMED_FORMAT:
            raise InvalidInput("explain", "is for models whose kind is a single tree (dgt)")
        self.encoder.encode(_as_mapping(context, "context"))  # a bad context: its 4xx
        return ReferenceEvaluator(document).explain(context)

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors, meta = self.inner.state()
        enc_tensors, enc_meta = self.encoder.state()
        tensors = {**tensors, **{PREFIX + k: v for k, v in enc_tensors.items()}}
        return tensors, {**meta, "config": self.config(), "features": enc_meta}

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        if "features" not in meta:
            raise ValueError("checkpoint holds no feature encoder state")
        mine = {k[len(PREFIX) :]: v for k, v in tensors.items() if k.startswith(PREFIX)}
        rest = {k: v for k, v in tensors.items() if not k.startswith(PREFIX)}
        self.encoder.load_state(mine, meta["features"])
        self.inner.load_state(rest, meta)


def _with_context(decision: Decision, context: Any) -> Decision:
    """``decision`` with another ``context`` (a frozen record: a new one, fields copied)."""
    new = object.__new__(Decision)
    object.__setattr__(new, "__dict__", {**vars(decision), "context": context})
    return new


def _as_mapping(context: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(context, Mapping):
        raise InvalidInput(
            field, "must be an object of named features (this model has a feature schema)"
        )
    return context


def _as_list(contexts: Any) -> list[Any]:
    if isinstance(contexts, Mapping) or not isinstance(contexts, Sequence | np.ndarray):
        raise InvalidInput("contexts", "must be a list of contexts")
    return list(contexts)
