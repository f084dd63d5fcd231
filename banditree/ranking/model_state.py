"""The state of a ranking model: its checkpoint (tensors and JSON metadata) and export.

The learner's tensors under ``core.``, each encoder's under ``context.`` / ``action.``
with its schema; the apprentice figures under ``apprentice`` for a model created in
apprentice mode; under ``explorer`` the explorer set since the model was created
(``set_explorer``: the config keeps the one it was created with).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from banditree.features import FeatureEncoder, FeatureSchema
from banditree.learners.apprentice import AgreementTracker, Mode
from banditree.learners.base import Tensors
from banditree.ranking.learner import RankingLearner


class RankingModel(Protocol):
    """What these functions read and set of a :class:`~banditree.ranking.RankingModel`."""

    context_encoder: FeatureEncoder | None
    action_encoder: FeatureEncoder | None
    core: RankingLearner | None
    _agreement: AgreementTracker | None
    _mode: Mode

    @property
    def explorer_settings(self) -> tuple[str, float | None, float | None]: ...
    def config(self) -> dict[str, Any]: ...
    def set_mode(self, mode: str) -> None: ...
    def set_explorer(
        self, explorer: str, parameter: float | None = None, exponent: float | None = None
    ) -> None: ...
    def _setup(self, context: FeatureSchema | None, action: FeatureSchema | None) -> None: ...
    def _counter_state(self) -> dict[str, Any]: ...
    def _load_counter_state(self, meta: dict[str, Any]) -> None: ...


def export_ranking(model: RankingModel) -> dict[str, Any]:
    """The model's schemas and encoded columns (``export_model``)."""
    out: dict[str, Any] = {"kind": "ranking"}
    for name, encoder in (("context", model.context_encoder), ("action", model.action_encoder)):
        if encoder is not None:
            out[f"{name}_features"] = encoder.schema.to_json()
            out[f"{name}_columns"] = encoder.columns()
    return out


def ranking_state(model: RankingModel) -> tuple[Tensors, dict[str, Any]]:
    """Tensors and JSON metadata that restore the model exactly (``state``)."""
    meta: dict[str, Any] = {"config": model.config(), **model._counter_state()}
    if model._agreement is not None:
        meta["apprentice"] = model._agreement.state(model._mode)
    created = model.config()
    explorer = model.explorer_settings
    if explorer != (
        created["explorer"],
        created["explorer_parameter"],
        created["explorer_exponent"],
    ):
        meta["explorer"] = list(explorer)  # set since creation (set_explorer)
    tensors: Tensors = {}
    if model.core is not None:
        core_tensors, core_meta = model.core.state_tensors()
        tensors.update({f"core.{k}": v for k, v in core_tensors.items()})
        meta["core"] = core_meta
        for name, encoder in (
            ("context", model.context_encoder),
            ("action", model.action_encoder),
        ):
            if encoder is None:
                meta[f"{name}_schema"] = None
                continue
            enc_tensors, enc_meta = encoder.state()
            tensors.update({f"{name}.{k}": v for k, v in enc_tensors.items()})
            meta[f"{name}_schema"] = encoder.schema.to_json()
            meta[f"{name}_encoder"] = enc_meta
    return {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}, meta


def load_ranking_state(model: RankingModel, tensors: Tensors, meta: dict[str, Any]) -> None:
    """Restore :func:`ranking_state` output into ``model`` (``load_state``)."""
    if "core" in meta:
        schemas = [
            None if meta[key] is None else FeatureSchema.model_validate(meta[key])
            for key in ("context_schema", "action_schema")
        ]
        model._setup(*schemas)
        assert model.core is not None
        model.core.load_state_tensors(
            {k[5:]: v for k, v in tensors.items() if k.startswith("core.")}, meta["core"]
        )
        for name, encoder in (
            ("context", model.context_encoder),
            ("action", model.action_encoder),
        ):
            if encoder is not None:
                prefix = f"{name}."
                encoder.load_state(
                    {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)},
                    meta[f"{name}_encoder"],
                )
    saved = meta.get("apprentice")
    if model._agreement is not None and saved is not None:
        model.set_mode(str(saved.get("mode", "apprentice")))
        model._agreement.load(saved)
    if "explorer" in meta:
        name, parameter, exponent = meta["explorer"]
        model.set_explorer(str(name), parameter, exponent)
    model._load_counter_state(meta)
