"""Checked request bodies of the hot paths: no pydantic model per request.

:func:`predict_body`, :func:`feedback_body` and :func:`rank_body` take the value
``orjson`` parsed and return the body only when :class:`~service.domain.schemas.PredictCreate`
(:class:`~service.domain.schemas.FeedbackCreate`,
:class:`~service.http.routes.ranking.RankCreate`) would accept it as it stands, with the same
values (integers of a context become floats, as under the schema).  The shape of a body
is checked by hand, its contexts by compiled validators of plain lists (the schema's
own ``Context`` type in a ``TypeAdapter``: no model instance, and faster than a loop in
Python, several times so for a batch).  Anything else, a bad body or one merely
unusual, gives None: the caller hands the request to the FastAPI route, whose schema
answers it (the same 422 naming the field and the bound).  So these checks may refuse
more than the schema does, never less.

The keys and the length bounds checked here are read from the schemas' fields at
import (:func:`length_bounds`), and a caller's event ids are checked by the rule the
schemas use (:func:`~service.domain.runtime.event_ids.given_event_id_ok`), so the two
paths cannot drift apart; the only key left to the route on purpose is predict's
``explain``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from annotated_types import MaxLen, MinLen
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from banditree.core.columns import FloatRows
from service.domain.requests import FeedbackBody, PredictBody, RankBody
from service.domain.runtime.event_ids import given_event_id_ok
from service.domain.schemas import (
    MAX_BATCH_LENGTH,
    Context,
    FeedbackCreate,
    NumberContext,
    PredictCreate,
)
from service.http.routes.ranking import CandidateCreate, RankCreate


def length_bounds(model: type[BaseModel], field: str) -> tuple[int, int]:
    """The ``(min_length, max_length)`` of ``model``'s ``field`` (0 when it has no minimum).

    Raises
    ------
    LookupError
        When the field has no ``max_length``: a hand check needs an upper bound.
    """
    metadata = model.model_fields[field].metadata
    lows = [m.min_length for m in metadata if isinstance(m, MinLen)]
    highs = [m.max_length for m in metadata if isinstance(m, MaxLen)]
    if not highs:
        raise LookupError(f"{model.__name__}.{field} has no max_length")
    return (lows[0] if lows else 0), highs[0]


#: predict's ``explain`` is left to the route (the hot path answers no explanation)
_PREDICT_KEYS = frozenset(PredictCreate.model_fields) - {"explain"}
_FEEDBACK_KEYS = frozenset(FeedbackCreate.model_fields)
#: compiled checks of one context and of a batch (pydantic-core validators of plain
#: lists, no model per request: faster than a loop in Python, a batch several times so)
_CONTEXT: TypeAdapter[list[float]] = TypeAdapter(Context)
_CONTEXTS: TypeAdapter[list[list[float]]] = TypeAdapter(
    Annotated[list[Context], Field(max_length=MAX_BATCH_LENGTH)]
)
#: a batch of number lists only, tried first: no Python call per context (the
#: ``Context`` type's named-features hook), half the time of ``_CONTEXTS`` for 256 rows
_NUMBER_ROWS: TypeAdapter[list[list[float]]] = TypeAdapter(
    Annotated[list[NumberContext], Field(max_length=MAX_BATCH_LENGTH)]
)
#: longest ``event_id`` the feedback schema takes, in characters
_MAX_EVENT_ID = length_bounds(FeedbackCreate, "event_id")[1]


def _contexts(value: Any, validator: TypeAdapter[Any]) -> Any:
    """``value`` checked by ``validator`` (a context, or a list of them), else None."""
    try:
        return validator.validate_python(value, strict=True)
    except ValidationError:
        return None


def _count(value: Any) -> bool:
    """An integer of at least 0 (not a bool)."""
    return type(value) is int and value >= 0


def predict_body(data: Any) -> PredictBody | None:
    """The predict body ``data`` when the schema takes it as it stands, else None."""
    if type(data) is not dict or not _PREDICT_KEYS.issuperset(data):
        return None
    single, batch = data.get("context"), data.get("contexts")
    if (single is None) == (batch is None) or ("context" in data and "contexts" in data):
        return None  # none, both, or a null alternative
    default, defaults = data.get("default_action"), data.get("default_actions")
    given, givens = data.get("event_id"), data.get("event_ids")
    if single is not None:
        context = _contexts(single, _CONTEXT)
        if context is None or defaults is not None or not (default is None or _count(default)):
            return None
        if givens is not None or not (given is None or given_event_id_ok(given)):
            return None
        return PredictBody(context, None, default, None, None if given is None else [given])
    if given is not None or not (givens is None or _event_ids(givens, batch)):
        return None
    contexts = None
    if default is None:
        contexts = _contexts(batch, _NUMBER_ROWS)
        if contexts is not None:  # Python floats, finite: the decisions keep these lists
            contexts = FloatRows(contexts)
        else:  # objects of named features, or a bad batch
            contexts = _contexts(batch, _CONTEXTS)
    if contexts is None:
        return None
    if defaults is not None and (
        type(defaults) is not list
        or len(defaults) != len(contexts)
        or not all(_count(d) for d in defaults)
    ):
        return None
    return PredictBody(None, contexts, None, defaults, givens)


def _event_ids(value: Any, batch: Any) -> bool:
    """One distinct event id a caller may give per context of ``batch``."""
    return (
        type(value) is list
        and type(batch) is list
        and len(value) == len(batch)
        and all(given_event_id_ok(v) for v in value)
        and len(set(value)) == len(value)
    )


def _number(value: Any) -> float | None:
    """A finite JSON number as a float (not a bool), else None."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def feedback_body(data: Any) -> FeedbackBody | None:
    """The feedback body ``data`` when the schema takes it as it stands, else None."""
    if type(data) is not dict or not _FEEDBACK_KEYS.issuperset(data) or len(data) != 2:
        return None  # the event id and exactly one alternative, nothing else
    event_id = data.get("event_id")
    if type(event_id) is not str or not 0 < len(event_id) <= _MAX_EVENT_ID:
        return None
    if "losses" in data:
        pair = data["losses"]
        if type(pair) is not list or len(pair) != 2:
            return None
        first, second = _number(pair[0]), _number(pair[1])
        if first is None or second is None:
            return None
        return FeedbackBody(event_id, None, None, (first, second))
    number = _number(data.get("loss", data.get("reward")))
    if number is None:
        return None
    if "loss" in data:
        return FeedbackBody(event_id, number, None, None)
    return FeedbackBody(event_id, None, number, None)


#: the keys of a rank body (:class:`~service.http.routes.ranking.RankCreate`) and of a candidate
_RANK_KEYS = frozenset(RankCreate.model_fields)
_CANDIDATE_KEYS = frozenset(CandidateCreate.model_fields)
#: the rank body's bounds: candidates, excluded ids, a candidate's id
MAX_CANDIDATES = length_bounds(RankCreate, "actions")[1]
_MAX_EXCLUDED = length_bounds(RankCreate, "excluded_actions")[1]
MAX_CANDIDATE_ID = length_bounds(CandidateCreate, "id")[1]


def _features(value: Any) -> bool:
    """Features as the schema takes them: null, an object, or a list of objects."""
    kind = type(value)
    return value is None or kind is dict or (kind is list and all(type(v) is dict for v in value))


def rank_body(data: Any) -> RankBody | None:
    """The rank body ``data`` when the schema takes it as it stands, else None."""
    if type(data) is not dict or not _RANK_KEYS.issuperset(data):
        return None
    context, actions = data.get("context"), data.get("actions")
    if not _features(context) or type(actions) is not list:
        return None
    if not 1 <= len(actions) <= MAX_CANDIDATES:
        return None
    candidates: list[tuple[str, Any]] = []
    append = candidates.append
    for action in actions:
        if type(action) is not dict or not _CANDIDATE_KEYS.issuperset(action):
            return None
        action_id, features = action.get("id"), action.get("features")
        if type(action_id) is not str or not 0 < len(action_id) <= MAX_CANDIDATE_ID:
            return None
        if not _features(features):
            return None
        append((action_id, features))
    excluded = data.get("excluded_actions", [])
    if type(excluded) is not list or len(excluded) > _MAX_EXCLUDED:
        return None
    if not all(type(e) is str for e in excluded):
        return None
    event_id = data.get("event_id")
    if event_id is not None and (not given_event_id_ok(event_id)):
        return None
    defer = data.get("defer_activation", False)
    if type(defer) is not bool:
        return None
    return RankBody(context, candidates, excluded, event_id, defer)
