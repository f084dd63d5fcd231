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
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from banditree.core.columns import FloatRows
from banditree.ranking import MAX_CANDIDATES
from banditree.ranking.inputs import MAX_ID_LENGTH as MAX_CANDIDATE_ID
from service.domain.requests import FeedbackBody, PredictBody, RankBody
from service.domain.runtime.ranking import MAX_EVENT_ID_LENGTH
from service.domain.schemas import MAX_BATCH_LENGTH, Context, NumberContext

_PREDICT_KEYS = frozenset({"context", "contexts", "default_action", "default_actions"})
_FEEDBACK_KEYS = frozenset({"event_id", "loss", "reward", "losses"})
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
#: largest ``event_id`` the feedback schema takes, in characters
_MAX_EVENT_ID = 128


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
    if single is not None:
        context = _contexts(single, _CONTEXT)
        if context is None or defaults is not None or not (default is None or _count(default)):
            return None
        return PredictBody(context, None, default, None)
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
    return PredictBody(None, contexts, None, defaults)


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


#: the keys of a rank body (:class:`~service.http.routes.ranking.RankCreate`)
_RANK_KEYS = frozenset({"context", "actions", "excluded_actions", "event_id", "defer_activation"})
_CANDIDATE_KEYS = frozenset({"id", "features"})


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
    if type(excluded) is not list or len(excluded) > MAX_CANDIDATES:
        return None
    if not all(type(e) is str for e in excluded):
        return None
    event_id = data.get("event_id")
    if event_id is not None and (
        type(event_id) is not str or not 0 < len(event_id) <= MAX_EVENT_ID_LENGTH
    ):
        return None
    defer = data.get("defer_activation", False)
    if type(defer) is not bool:
        return None
    return RankBody(context, candidates, excluded, event_id, defer)
