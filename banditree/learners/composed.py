"""A learner built from parts: a core learner of numeric rows and the stages around it.

* the **preprocessing stage**, a feature encoder
  (:class:`~banditree.learners.featured.FeatureStage`): contexts are JSON objects of
  named features, encoded into the rows the core reads.  Decisions keep the raw context,
  so feedback (and a replay of the log) re-encodes it; the encoder learns at learn time
  only, in log order, and decisions read the view published with the core's last update;
* **schema inference** (:class:`~banditree.learners.inferring.SchemaInference`): the
  preprocessing stage and the core are built from the first decision learned from; until
  then a placeholder core on one blank column decides;
* the **decision stage**, the apprentice policy
  (:class:`~banditree.learners.apprentice.ApprenticePolicy`): while apprenticed, the
  caller's default action is played and the core's own choice compared with it.

:class:`~banditree.learners.FeaturedLearner`, :class:`~banditree.learners.InferringLearner`
and :class:`~banditree.learners.Apprentice` are this class built with one part each (a
config takes either named features or apprentice mode, not both).  Every member is
written here once, as the parts a learner holds make it; the capabilities
(:attr:`apprentice`, :attr:`explainer`) say which parts those are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.features import FeatureEncoder, FeatureSchema
from banditree.learners.base import DefaultTaker, Explainer, Learner, Tensors
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.validation import InvalidInput, as_contexts

#: the one column the placeholder core reads before a schema is inferred
BLANK = (0.0,)
#: the refusal of what needs a schema before one is inferred
_NO_SCHEMA_YET = "the model has no schema yet: it is inferred at the first feedback"

_Outcome = bool | ValueError | KeyError | TypeError


class FeatureEncoding(Protocol):
    """The preprocessing part (:class:`banditree.learners.featured.FeatureStage`)."""

    encoder: FeatureEncoder

    @property
    def schema(self) -> FeatureSchema: ...

    def encode(self, context: Any, field: str) -> FloatArray: ...

    def encode_many(self, raw: list[Any]) -> FloatArray: ...

    def encoded(self, decision: Decision) -> Decision: ...

    def export(self, core: Learner) -> dict[str, Any]: ...

    def names_paths(self, document: Mapping[str, Any]) -> bool: ...

    def explain(self, document: Mapping[str, Any], context: Mapping[str, Any]) -> list[str]: ...

    def state(self) -> tuple[Tensors, dict[str, Any]]: ...

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> Tensors: ...


class Inference(Protocol):
    """The inference part (:class:`banditree.learners.inferring.SchemaInference`)."""

    placeholder: Learner

    def config_for(self, context: Mapping[str, Any], field: str) -> Any: ...

    def infer(self, context: Mapping[str, Any]) -> ComposedLearner: ...

    def built(self, features: dict[str, Any]) -> ComposedLearner: ...


class DecisionStage(Protocol):
    """The decision part (:class:`banditree.learners.apprentice.ApprenticePolicy`)."""

    agreement_window: int

    @property
    def mode(self) -> str: ...

    def set_mode(self, mode: str) -> None: ...

    def decide(self, own: Decision, default_action: int | None, core: Learner) -> Decision: ...

    def learned(self, decision: Decision, feedback: Feedback) -> None: ...

    def report(self) -> dict[str, float | int | None]: ...

    def state(self) -> dict[str, Any]: ...

    def load(self, saved: dict[str, Any]) -> None: ...


class ComposedLearner(Learner):
    """A core learner with a preprocessing stage, schema inference or a decision stage."""

    def __init__(
        self,
        core: Learner,
        *,
        features: FeatureEncoding | None = None,
        inference: Inference | None = None,
        policy: DecisionStage | None = None,
        config: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        self.core = core
        self.features = features
        self.inference = inference
        self.policy = policy
        self.task, self.n_actions, self.n_features = core.task, core.n_actions, core.n_features
        self.seed = core.seed if seed is None else seed
        self._config = dict(config) if config is not None else core.config()
        self._named: tuple[int, dict[str, Any]] | None = None  # export_model of a version

    @property
    def inner(self) -> Learner:
        """The core learner (the one that learns the rows)."""
        return self.core

    @property
    def _awaiting_schema(self) -> bool:
        """Schema inference, before the first decision learned from."""
        return self.inference is not None and self.features is None

    # -- the parts ----------------------------------------------------------------------
    @property
    def schema(self) -> FeatureSchema | None:
        """The feature schema (declared or inferred), or None."""
        return None if self.features is None else self.features.schema

    @property
    def encoder(self) -> FeatureEncoder:
        """The preprocessing stage's encoder."""
        return self._features().encoder

    def _features(self) -> FeatureEncoding:
        if self.features is None:
            if self.inference is not None:
                raise InvalidInput("context", _NO_SCHEMA_YET)
            raise InvalidInput("context", "this model takes rows of numbers, not named features")
        return self.features

    def _policy(self) -> DecisionStage:
        if self.policy is None:
            raise ValueError("this model was not created in apprentice mode")
        return self.policy

    def _infer(self, decision: Decision) -> None:
        """Fix the schema by ``decision``'s context: the stage and core built from it."""
        assert self.inference is not None
        built = self.inference.infer(_as_mapping(decision.context, "decision.context"))
        self.core, self.features, self._named = built.core, built.features, None

    @property
    def apprentice(self) -> DefaultTaker | None:
        """Itself when it holds the apprentice policy."""
        return self if self.policy is not None else None

    @property
    def explainer(self) -> Explainer | None:
        """Itself when its contexts are named features."""
        return self if self.features is not None or self.inference is not None else None

    @property
    def mode(self) -> str:
        """The apprentice policy's mode."""
        return self._policy().mode

    def set_mode(self, mode: str) -> None:
        """Switch between ``apprentice`` and ``online``; the learned state is kept."""
        self._policy().set_mode(mode)

    @property
    def agreement_window(self) -> int:
        return self._policy().agreement_window

    def agreement(self) -> dict[str, float | int | None]:
        """:meth:`~banditree.learners.apprentice.AgreementTracker.report` of this model's
        apprentice decisions."""
        return self._policy().report()

    # -- deciding ------------------------------------------------------------------------
    def act(
        self, context: Any, event_id: str | None = None, default_action: int | None = None
    ) -> Decision:
        """The core's decision on the encoded context; apprenticed: the caller's default
        with probability 1 (``greedy_action`` the core's own choice)."""
        features = self.features
        if self.inference is not None:
            mapping = _as_mapping(context, "context")
            if features is None:
                self.inference.config_for(mapping, "context")
            event_id = self._next_event_id(event_id)
            if features is None:
                return _with_context(self.core.act(BLANK, event_id), context)
        if features is not None:
            x = features.encode(context, "context")
            return _with_context(self.core.act(x, event_id), context)
        own = self.core.act(context, event_id)
        if self.policy is None:
            return own
        return self.policy.decide(own, default_action, self.core)

    def act_columns(
        self,
        contexts: Sequence[Any] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
        default_actions: Sequence[int] | None = None,
    ) -> DecisionColumns:
        """:meth:`act` for a batch, held column by column."""
        features = self.features
        if self.inference is not None:
            raw = _as_list(contexts)
            if features is None:
                for i, c in enumerate(raw):
                    self.inference.config_for(_as_mapping(c, f"contexts[{i}]"), f"contexts[{i}]")
            ids: list[str | None] = list(self._next_event_ids(event_ids, len(raw)))
            if features is None:
                blank = np.zeros((len(raw), 1))
                return dataclasses.replace(self.core.act_columns(blank, ids), contexts=raw)
            return self._featured_columns(raw, ids)
        if features is not None:
            return self._featured_columns(_as_list(contexts), event_ids)
        if self.policy is not None:
            return DecisionColumns.from_decisions(
                self.act_batch(contexts, event_ids, default_actions)
            )
        return self.core.act_columns(contexts, event_ids)

    def _featured_columns(
        self, raw: list[Any], event_ids: Sequence[str | None] | None
    ) -> DecisionColumns:
        columns = self.core.act_columns(self._features().encode_many(raw), event_ids)
        return dataclasses.replace(columns, contexts=raw)

    def act_batch(
        self,
        contexts: Sequence[Any] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
        default_actions: Sequence[int] | None = None,
    ) -> list[Decision]:
        """:meth:`act` per context; with the policy, the caller's default of each row
        (``default_actions``, one per context; needed in apprentice mode, ignored online)."""
        if self.policy is None:
            return self.act_columns(contexts, event_ids).rows()
        x = as_contexts(contexts, self.n_features)
        ids = self._check_event_ids(event_ids, x.shape[0])
        if default_actions is not None and len(default_actions) != x.shape[0]:
            raise InvalidInput(
                "default_actions",
                f"holds {len(default_actions)} actions for {x.shape[0]} contexts",
            )
        defaults = list(default_actions) if default_actions is not None else [None] * len(ids)
        return [
            self.act(row, event_id, default)
            for row, event_id, default in zip(x, ids, defaults, strict=True)
        ]

    @property
    def batch_exact(self) -> bool:
        return self.inference is None and self.policy is None and self.core.batch_exact

    def predict(self, contexts: Any) -> FloatArray:
        """Greedy actions / values for a batch (JSON contexts with named features)."""
        if self._awaiting_schema:
            assert self.inference is not None
            raw = _as_list(contexts)
            for i, c in enumerate(raw):
                self.inference.config_for(_as_mapping(c, f"contexts[{i}]"), f"contexts[{i}]")
            return self.core.predict(np.zeros((len(raw), 1)))
        if self.features is not None:
            return self.core.predict(self.features.encode_many(_as_list(contexts)))
        return self.core.predict(contexts)

    def encode(self, context: Mapping[str, Any]) -> FloatArray:
        """The vector decisions read for ``context`` (the published encoder view)."""
        return self._features().encode(context, "context")

    def _row(self, context: Any) -> Any:
        """What the core reads for ``context``."""
        if self._awaiting_schema:
            assert self.inference is not None
            self.inference.config_for(_as_mapping(context, "context"), "context")
            return BLANK
        return context if self.features is None else self.encode(context)

    def reward_estimates(self, context: Any) -> FloatArray:
        """The core's predicted reward of every action for ``context``."""
        core = self.core
        if not isinstance(core, GradientBandit):
            raise ValueError("reward_estimates is for gradient-learned models")
        return core.reward_estimates(self._row(context))

    def action_probabilities(self, context: Any) -> FloatArray:
        """Classification: the probability ``act`` plays each action for ``context``."""
        probabilities = getattr(self.core, "action_probabilities", None)
        if probabilities is None:
            raise ValueError("action_probabilities is for classification learners")
        result: FloatArray = probabilities(self._row(context))
        return result

    def parameters(self) -> dict[str, np.ndarray]:
        """A copy of the core's parameters."""
        core = self.core
        if not isinstance(core, GradientBandit):
            raise ValueError("parameters are for gradient-learned models")
        return core.parameters()

    def explain(self, context: Mapping[str, Any]) -> list[str]:
        """The served leaf's path for ``context`` as named conditions (a hard tree only)."""
        if self.features is None:
            if self.inference is not None:
                raise InvalidInput("explain", _NO_SCHEMA_YET)
            raise InvalidInput("explain", "is for models with named features")
        return self.features.explain(self.export_model(), context)

    def trace(self, context: Any) -> dict[str, Any]:
        """The core's trace of the context it reads, with the named path (:meth:`explain`)
        where the model is a single tree with named features."""
        if self.features is None:
            if self.inference is not None:
                raise InvalidInput("context", _NO_SCHEMA_YET)
            return self.core.trace(context)
        out = self.core.trace(self.encode(context))
        named = self.features.names_paths(self.export_model())
        out["explanation"] = self.explain(context) if named else None
        return out

    # -- learning --------------------------------------------------------------------------
    def _learning(self, decision: Decision) -> Decision:
        """``decision`` as the core learns it (its context encoded as learning encodes)."""
        if self.features is not None:
            return self.features.encoded(decision)
        if self.inference is not None:
            context = _as_mapping(decision.context, "decision.context")
            self.inference.config_for(context, "decision.context")
            return _with_context(decision, BLANK)
        return decision

    def check(self, decision: Decision, feedback: Feedback) -> None:
        self.core.check(self._learning(decision), feedback)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Check, then the stages learn (the first decision learned fixes an inferred
        schema; the encoder learns the context), then the core learns."""
        if self._awaiting_schema:
            self.check(decision, feedback)
            self._infer(decision)
        features = self.features
        if features is not None:
            self.check(decision, feedback)
            features.encoder.update(_as_mapping(decision.context, "decision.context"))
            before = self.core.version
            changed = self.core.learn(features.encoded(decision), feedback)
            if self.core.version != before:
                features.encoder.publish()
            return changed
        changed = self.core.learn(decision, feedback)
        if self.policy is not None:
            self.policy.learned(decision, feedback)
        return changed

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[_Outcome]:
        """:meth:`learn` pair by pair; with the encoder, the core's part in one
        ``learn_batch`` (:meth:`_featured_learn_batch`); with inference, pair by pair until
        a decision learned fixes the schema, then the rest as a featured learner."""
        n = len(decisions)
        if self.inference is not None:
            if n != len(feedbacks):
                return super().learn_batch(decisions, feedbacks)
            out: list[_Outcome] = []
            while self.features is None and len(out) < n:
                i = len(out)
                out += super().learn_batch(decisions[i : i + 1], feedbacks[i : i + 1])
            if self.features is not None and len(out) < n:
                out += self._featured_learn_batch(decisions[len(out) :], feedbacks[len(out) :])
            return out
        if self.features is not None:
            return self._featured_learn_batch(decisions, feedbacks)
        return super().learn_batch(decisions, feedbacks)

    def _featured_learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[_Outcome]:
        """The encoder reads nothing of the core, so it checks, learns and encodes every
        pair first, in order; then the core learns the encoded pairs in one call, and
        decisions are shown the encoder as it stood after the pair whose update was the
        batch's last (what ``learn`` published): the same state.  A core other than a
        gradient bandit (whose True is exactly a new version) goes pair by pair."""
        core, features = self.core, self._features()
        if len(decisions) != len(feedbacks) or not isinstance(core, GradientBandit):
            return super().learn_batch(decisions, feedbacks)
        out: list[_Outcome] = []
        encoded, learned, slots, views = [], [], [], []
        for decision, feedback in zip(decisions, feedbacks, strict=True):
            try:  # learn's steps before the core's
                self.check(decision, feedback)
                features.encoder.update(_as_mapping(decision.context, "decision.context"))
                encoded.append(features.encoded(decision))
            except (ValueError, KeyError, TypeError) as err:
                out.append(err)
                continue
            learned.append(feedback)
            slots.append(len(out))
            views.append(features.encoder.view())
            out.append(False)
        results = core.learn_batch(encoded, learned)
        for slot, result in zip(slots, results, strict=True):
            out[slot] = result
        last = [i for i, result in enumerate(results) if result is True]
        if last:
            features.encoder.publish(views[last[-1]])
        return out

    def note_unanswered(self, decision: Decision) -> None:
        """The core counts the decision, its context encoded as learning would (the
        encoder does not learn from it: it got no feedback); nothing before a schema is
        inferred (no tree to count at yet)."""
        if not self._awaiting_schema:
            self.core.note_unanswered(self._learning(decision))

    def prepare_to_learn(self) -> None:
        self.core.prepare_to_learn()

    def drift_events(self) -> list[dict[str, Any]]:
        return [] if self._awaiting_schema else self.core.drift_events()

    # -- state -----------------------------------------------------------------------------
    def leaf_stats(self) -> dict[str, Any] | None:
        return None if self._awaiting_schema else self.core.leaf_stats()

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        return None if self._awaiting_schema else self.core.leaf_probabilities()

    def blend_state(self) -> dict[str, Any] | None:
        return None if self._awaiting_schema else self.core.blend_state()

    def input_scaling(self) -> dict[str, list[float]] | None:
        """The core's scaling of numeric contexts (None for named features)."""
        if self.features is not None or self.inference is not None:
            return None
        return self.core.input_scaling()

    @property
    def version(self) -> int:
        return 0 if self._awaiting_schema else self.core.version

    @property
    def counters(self) -> dict[str, float]:
        if self.inference is None:
            return self.core.counters
        base = super().counters if self.features is None else self.core.counters
        return {**base, "decisions": self._n_decisions}

    def export_model(self) -> dict[str, Any]:
        """The core's export; with named features, a hard tree as the named document
        (:meth:`FeatureStage.export <banditree.learners.featured.FeatureStage.export>`)."""
        if self.features is None:
            if self.inference is not None:
                return {"kind": "none", "features": "infer"}
            return self.core.export_model()
        version = self.core.version
        if self._named is not None and self._named[0] == version:
            return self._named[1]
        exported = self.features.export(self.core)
        self._named = (version, exported)
        return exported

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        if self.inference is not None:
            tensors: Tensors = {}
            meta: dict[str, Any] = {"inferred_features": None}
            if self.features is not None:
                tensors, meta = self._featured_state()
                meta = {**meta, "inferred_features": self.features.schema.to_json()}
            return tensors, {
                **meta,
                "config": self.config(),
                "n_inferring_decisions": self._n_decisions,
            }
        if self.features is not None:
            return self._featured_state()
        tensors, meta = self.core.state()
        if self.policy is not None:
            meta["apprentice"] = self.policy.state()
        return tensors, meta

    def _featured_state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors, meta = self.core.state()
        encoder_tensors, encoder_meta = self._features().state()
        return {**tensors, **encoder_tensors}, {
            **meta,
            "config": self.config(),
            "features": encoder_meta,
        }

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        if self.inference is not None:
            if "inferred_features" not in meta:
                raise ValueError("checkpoint holds no inferred schema state")
            self._n_decisions = int(meta["n_inferring_decisions"])
            self.core, self.features, self._named = self.inference.placeholder, None, None
            if meta["inferred_features"] is not None:
                built = self.inference.built(meta["inferred_features"])
                built.load_state(tensors, {**meta, "config": built.config()})
                self.core, self.features = built.core, built.features
            return
        if self.features is not None:
            if "features" not in meta:
                raise ValueError("checkpoint holds no feature encoder state")
            rest = self.features.load_state(tensors, meta["features"])
            self.core.load_state(rest, meta)
            return
        self.core.load_state(tensors, meta)
        if self.policy is not None:
            self.policy.load(meta.get("apprentice") or {})


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
