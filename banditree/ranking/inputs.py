"""The inputs of a ranking model: JSON feature objects and candidate lists, checked with
the field and the bound named."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput, infer_schema
from banditree.learners.ranking_options import MAX_SIDE_WIDTH
from banditree.ranking.learner import MAX_CANDIDATES

#: longest candidate id (characters)
MAX_ID_LENGTH = 256


def as_features(value: Any, field: str) -> dict[str, Any]:
    """A JSON object of features, from an object, a list of objects (merged) or null."""
    if type(value) is dict:  # the common case, before the slower abstract checks
        return dict(value)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise InvalidInput(f"{field}[{i}]", "must be an object of named features")
            merged.update(item)
        return merged
    raise InvalidInput(field, "must be an object of named features or a list of them")


def infer_or_none(
    objects: Sequence[Mapping[str, Any]], max_categories: int
) -> FeatureSchema | None:
    """The schema of ``objects``; None when none names a feature with a value."""
    try:
        return infer_schema(objects, max_categories)
    except InvalidInput:
        return None


def check_actions(actions: Sequence[tuple[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The ids and feature objects of ``actions``, refused with the field and bound named."""
    n = len(actions)
    if not 1 <= n <= MAX_CANDIDATES:
        raise InvalidInput(
            "actions", f"must hold between 1 and {MAX_CANDIDATES} candidates, got {n}"
        )
    ids: list[str] = []
    features: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, (action_id, value) in enumerate(actions):
        if not isinstance(action_id, str) or not 1 <= len(action_id) <= MAX_ID_LENGTH:
            raise InvalidInput(
                f"actions[{i}].id", f"must be a string of 1 to {MAX_ID_LENGTH} characters"
            )
        if action_id in seen:
            raise InvalidInput(
                f"actions[{i}].id", f"duplicate id {action_id!r}: ids must be unique"
            )
        seen.add(action_id)
        ids.append(action_id)
        features.append(as_features(value, f"actions[{i}].features"))
    return ids, features


def check_before_schema(
    context: Mapping[str, Any], features: Sequence[Mapping[str, Any]], max_categories: int
) -> None:
    """Refuse now what inference would refuse at learn time (a model with no schema yet):
    too many encoded columns, or values the inferred encoders refuse."""
    for side, objs in (("context", [context]), ("actions", features)):
        schema = infer_or_none(objs, max_categories)
        if schema is None:
            continue
        if schema.width > MAX_SIDE_WIDTH:
            raise InvalidInput(side, f"{schema.width} encoded columns, more than {MAX_SIDE_WIDTH}")
        encoder = FeatureEncoder(schema)  # the values' checks of the encoder
        for i, obj in enumerate(objs):
            encoder.encode(obj, True, "context" if side == "context" else f"actions[{i}].features")


def learn_encoders(
    context_encoder: FeatureEncoder | None,
    action_encoder: FeatureEncoder | None,
    context: Mapping[str, Any],
    features: Sequence[Mapping[str, Any]],
) -> tuple[np.ndarray, np.ndarray]:
    """Update the encoders from a decision's context and candidates (learn time, log
    order), then encode them by what the encoders learned: ``(c (dc,), a (n, da))``,
    each object flattened once."""
    n = len(features)
    c, a = np.zeros(0), np.zeros((n, 0))
    if context_encoder is not None:
        flat = context_encoder.flat(context, "decision.context")
        context_encoder.update_flat(flat)
        c = context_encoder.encode_flat(flat, False)
    if action_encoder is not None:
        fields = [f"actions[{i}].features" for i in range(n)]
        flats = [action_encoder.flat(f, field) for f, field in zip(features, fields, strict=True)]
        for flat, field in zip(flats, fields, strict=True):
            action_encoder.update_flat(flat, field)
        a = np.zeros((n, action_encoder.width))
        for flat, field, row in zip(flats, fields, a, strict=True):
            action_encoder.encode_flat(flat, False, field, row)
    return c, a
