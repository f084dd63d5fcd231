"""Hand-checked request bodies of the hot paths: no pydantic model per request.

:func:`predict_body` and :func:`feedback_body` take the value ``orjson`` parsed and
return the body only when :class:`~service.schemas.PredictCreate` (or
:class:`~service.schemas.FeedbackCreate`) would accept it as it stands, with the same
values (integers of a context become floats, as under the schema).  Anything else, a
bad body or one merely unusual, gives None: the caller hands the request to the FastAPI
route, whose schema answers it (the same 422 naming the field and the bound).  So these
checks may refuse more than the schema does, never less.
"""

from __future__ import annotations

import math
from typing import Any

from service.schemas import MAX_BATCH_LENGTH, MAX_CONTEXT_LENGTH

_PREDICT_KEYS = frozenset({"context", "contexts", "default_action", "default_actions"})
_FEEDBACK_KEYS = frozenset({"event_id", "loss", "reward", "losses"})
#: largest ``event_id`` the feedback schema takes, in characters
_MAX_EVENT_ID = 128


class PredictBody:
    """A checked predict body: one ``context`` or a batch of ``contexts``, the defaults."""

    __slots__ = ("context", "contexts", "default_action", "default_actions")

    def __init__(
        self,
        context: list[float] | None,
        contexts: list[list[float]] | None,
        default_action: int | None,
        default_actions: list[int] | None,
    ) -> None:
        self.context = context
        self.contexts = contexts
        self.default_action = default_action
        self.default_actions = default_actions

    def defaults(self) -> list[int] | None:
        """The caller's default actions, one per context, or None."""
        if self.default_action is not None:
            return [self.default_action]
        return self.default_actions


def _floats(value: Any) -> list[float] | None:
    """``value`` as a context (a list of at most MAX_CONTEXT_LENGTH finite numbers), else None."""
    if type(value) is not list or len(value) > MAX_CONTEXT_LENGTH:
        return None
    for item in value:
        if type(item) is not float:  # ints become floats, as under the schema; bools do not
            if not all(type(v) is float or type(v) is int for v in value):
                return None
            try:
                value = [float(v) for v in value]
            except OverflowError:
                return None
            break
    if not math.isfinite(sum(value)):
        return None  # a non-finite value, or a sum that overflows: the schema decides
    return value


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
        context = _floats(single)
        if context is None or defaults is not None or not (default is None or _count(default)):
            return None
        return PredictBody(context, None, default, None)
    if type(batch) is not list or len(batch) > MAX_BATCH_LENGTH or default is not None:
        return None
    contexts = []
    for row in batch:
        context = _floats(row)
        if context is None:
            return None
        contexts.append(context)
    if defaults is not None and (
        type(defaults) is not list
        or len(defaults) != len(contexts)
        or not all(_count(d) for d in defaults)
    ):
        return None
    return PredictBody(None, contexts, None, defaults)


class FeedbackBody:
    """A checked feedback body: the event id and exactly one of loss, reward or losses."""

    __slots__ = ("event_id", "loss", "losses", "reward")

    def __init__(
        self,
        event_id: str,
        loss: float | None,
        reward: float | None,
        losses: tuple[float, float] | None,
    ) -> None:
        self.event_id = event_id
        self.loss = loss
        self.reward = reward
        self.losses = losses


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
