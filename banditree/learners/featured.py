"""A learner whose contexts are JSON objects of named features (a config with ``features``).

:class:`FeaturedLearner` is a :class:`~banditree.learners.composed.ComposedLearner` built
from a core learner of the encoded width and a :class:`FeatureStage`, the preprocessing
stage that encodes each context with its :class:`~banditree.features.FeatureEncoder`.
Decisions keep the raw context, so feedback (and a replay of the log) re-encodes it.
The encoder learns at learn time only, in log order, and decisions read the view
published with the core's last update.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from banditree.core.records import Decision
from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput
from banditree.features.export import FORMAT as NAMED_FORMAT
from banditree.features.export import ReferenceEvaluator, export_tree
from banditree.learners.base import Learner, Tensors
from banditree.learners.boosted.codes import CategoryCodes
from banditree.learners.composed import ComposedLearner, _as_mapping, _with_context
from banditree.learners.gradient_bandit import GradientBandit

#: prefix of the encoder's tensors in a checkpoint
PREFIX = "features."
TREE_FORMAT = "banditree.hard_tree/v1"


class FeatureStage:
    """The preprocessing stage: JSON objects of named features in, the core's rows out."""

    def __init__(self, schema: FeatureSchema, codes: CategoryCodes | None = None) -> None:
        self.encoder = FeatureEncoder(schema)
        #: the categorical features' code columns after the encoded ones (a boosted
        #: model's ``category_codes: all``; None: the encoded columns only)
        self.codes = codes

    @property
    def width(self) -> int:
        """The columns of a row the core reads."""
        return self.encoder.width if self.codes is None else self.codes.out_width

    def _coded(self, x: np.ndarray) -> np.ndarray:
        return x if self.codes is None else self.codes.extend(x)

    @property
    def schema(self) -> FeatureSchema:
        return self.encoder.schema

    def encode(self, context: Any, field: str) -> np.ndarray:
        """The row decisions read for ``context`` (the published encoder view)."""
        return self._coded(self.encoder.encode(_as_mapping(context, field)))

    def encode_many(self, raw: list[Any]) -> np.ndarray:
        """The rows decisions read for a list of JSON contexts (each checked to be an object)."""
        return self._coded(
            self.encoder.encode_many([_as_mapping(c, f"contexts[{i}]") for i, c in enumerate(raw)])
        )

    def encoded(self, decision: Decision) -> Decision:
        """``decision`` with its context encoded as learning encodes it (not the view)."""
        context = _as_mapping(decision.context, "decision.context")
        x = self._coded(self.encoder.encode(context, served=False, field="decision.context"))
        return _with_context(decision, tuple(x.tolist()))

    def export(self, core: Learner) -> dict[str, Any]:
        """A hard tree: the named document (:func:`banditree.features.export.export_tree`)
        that :class:`~banditree.features.export.ReferenceEvaluator` runs on raw contexts;
        a boosted model: its own export, its ``online_tree`` as that named document;
        another model: its own export; each with the schema and the column names."""
        exported = dict(core.export_model())
        # a tree of code columns (codes) has no named form: its own export stays
        named = self.codes is None
        if named and exported.get("format") == TREE_FORMAT and isinstance(core, GradientBandit):
            exported = self._named_tree(exported, core)
        online, tree = exported.get("online_tree"), getattr(core, "online_tree", None)
        if named and isinstance(online, dict) and online.get("format") == TREE_FORMAT:
            if isinstance(tree, GradientBandit):
                exported["online_tree"] = self._named_tree(online, tree)
        exported["features"] = self.schema.to_json()
        columns = self.encoder.columns()
        if self.codes is not None:
            columns = [columns[j] for j in self.codes.keep.tolist()]
            columns += [f"[{name} code]" for name in self.codes.names]
        exported["columns"] = columns
        return exported

    def _named_tree(self, exported: dict[str, Any], tree: GradientBandit) -> dict[str, Any]:
        mean, inv_scale, clip = tree.served_scaling()
        return export_tree(exported, self.encoder, mean, inv_scale, clip)

    @staticmethod
    def named_tree(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The named hard tree of ``document`` (an :meth:`export`): itself (a ``dgt``
        model), its ``online_tree`` (a boosted model's), or None."""
        if document.get("format") == NAMED_FORMAT:
            return document
        online = document.get("online_tree")
        if isinstance(online, Mapping) and online.get("format") == NAMED_FORMAT:
            return online
        return None

    @classmethod
    def names_paths(cls, document: Mapping[str, Any]) -> bool:
        """Whether ``document`` (an :meth:`export`) names its leaf paths (a hard tree, or
        a boosted model's online tree)."""
        return cls.named_tree(document) is not None

    def explain(self, document: Mapping[str, Any], context: Mapping[str, Any]) -> list[str]:
        """The leaf path of ``context`` in ``document``'s named tree (:meth:`named_tree`)
        as named conditions."""
        tree = self.named_tree(document)
        if tree is None:
            raise InvalidInput(
                "explain",
                "is for a single tree (kind dgt) or a boosted model with its online tree",
            )
        self.encoder.encode(_as_mapping(context, "context"))  # a bad context: its 4xx
        return ReferenceEvaluator(tree).explain(context)

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        """The encoder's tensors (under :data:`PREFIX`) and its JSON state."""
        tensors, meta = self.encoder.state()
        return {PREFIX + k: v for k, v in tensors.items()}, meta

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> Tensors:
        """Restore :meth:`state`; the tensors that are not the encoder's (the core's)."""
        mine = {k[len(PREFIX) :]: v for k, v in tensors.items() if k.startswith(PREFIX)}
        self.encoder.load_state(mine, meta)
        return {k: v for k, v in tensors.items() if not k.startswith(PREFIX)}


class FeaturedLearner(ComposedLearner):
    """A core learner of width ``schema.width`` built with the feature encoding stage."""

    def __init__(
        self,
        inner: Learner,
        schema: FeatureSchema,
        config: dict[str, Any],
        codes: CategoryCodes | None = None,
    ) -> None:
        stage = FeatureStage(schema, codes)
        if inner.n_features != stage.width:
            raise ValueError(f"inner learner reads {inner.n_features} columns, not {stage.width}")
        super().__init__(inner, features=stage, config=config)
