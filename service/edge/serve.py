"""Predict, feedback and rank answered in the app's outermost layer, before FastAPI.

FastAPI's own machinery per request (its error and telemetry middleware, routing,
dependency resolution, a pydantic model per body, response classes) costs several
times a whole decision.  :class:`HotPaths` answers ``POST /v1/models/{name}/predict``,
``/feedback`` and ``/rank`` with a declared-length JSON body itself, after
:class:`~service.edge.app.ServiceHttp` checked the API key and the body bound
and while it times, counts and logs the request: a predict body of number lists and
nothing else is read by the kernel (:func:`~banditree.kernel.rows.parse_row` for one
context, :func:`~banditree.kernel.rows.parse_rows` for a batch), any other body is
parsed by ``orjson`` and checked by hand (below), the operation the route runs
(:mod:`service.domain.operations`: ``decide``, ``give_feedback`` or ``rank_answer``)
answers it, and an error it raises gets the answer of the app's
handlers (:func:`~service.http.errors.error_answer`).

A request these paths do not take as it stands (another content type, a chunked body,
a body that is not JSON or that the hand checks do not pass) goes on to the FastAPI
route with the body it sent, so every refusal is the route's own (same status, same
422 naming the field and the bound).  The routes stay in the app and in its OpenAPI
document.

**The hand checks** (no pydantic model per request).

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
schemas use (:func:`~service.domain.schemas.given_event_id_ok`), so the two
paths cannot drift apart; the only key left to the route on purpose is predict's
``explain``.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

import orjson
from annotated_types import MaxLen, MinLen
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from starlette.datastructures import State
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from banditree.core.columns import FloatRows
from banditree.kernel.rows import parse_row, parse_rows
from service.domain.operations import (
    StateView,
    decide,
    decide_context,
    give_feedback,
    rank_answer,
)
from service.domain.schemas import (
    MAX_BATCH_LENGTH,
    MAX_CONTEXT_LENGTH,
    Context,
    FeedbackBody,
    FeedbackCreate,
    NumberContext,
    PredictBody,
    PredictCreate,
    RankBody,
    given_event_id_ok,
)
from service.http.deps import MODEL_NAME_PATTERN
from service.http.errors import error_answer
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
        if type(features) is not dict and not _features(features):  # an object: the usual
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


#: route templates the hot paths answer (the ``route`` label of the HTTP metrics)
PREDICT_ROUTE = "/v1/models/{name}/predict"
FEEDBACK_ROUTE = "/v1/models/{name}/feedback"
RANK_ROUTE = "/v1/models/{name}/rank"
_TEMPLATES = {"predict": PREDICT_ROUTE, "feedback": FEEDBACK_ROUTE, "rank": RANK_ROUTE}
_PATH = re.compile("/v1/models/(" + MODEL_NAME_PATTERN.strip("^$") + ")/(predict|feedback|rank)")
_PARSERS = {"predict": predict_body, "feedback": feedback_body, "rank": rank_body}
_JSON = (b"content-type", b"application/json")


def hot_route(scope: Scope) -> tuple[str, str] | None:
    """``(operation, model name)`` of a request the hot paths can take, else None.

    Taken: ``POST`` to a predict, feedback or rank path with a valid model name and a body of
    declared length declared as ``application/json``.
    """
    if scope["method"] != "POST":
        return None
    found = _PATH.fullmatch(scope["path"])
    if found is None or scope.get("root_path"):
        return None
    json_body = declared = False
    for key, value in scope["headers"]:
        if key == b"content-type":
            json_body = value.partition(b";")[0].strip().lower() == b"application/json"
        elif key == b"content-length":
            declared = True
        elif key == b"transfer-encoding":
            return None
    return (found.group(2), found.group(1)) if json_body and declared else None


async def _read_body(receive: Receive, message: Message | None = None) -> bytes | None:
    """The whole request body (``message`` its first message when already received), or
    None when the client went away."""
    if message is None:
        message = await receive()
    if message["type"] != "http.request":
        return None
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return body  # the usual case: one message
    chunks = [body]
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then whatever the connection sends."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


#: paths taken, remembered (method and headers are checked each time): at most this many
_TAKEN_PATHS = 1024


class HotPaths:
    """Predict, feedback and rank of the app whose ``state`` they read; ``route`` is the app's
    FastAPI layer, which answers what they do not take."""

    def __init__(self, state: State, route: ASGIApp) -> None:
        self.state = state
        self.view = StateView(state)
        self.route = route
        #: path -> (route template, operation, model name) of the paths taken so far
        self._taken: dict[str, tuple[str, str, str]] = {}

    @staticmethod
    def take(scope: Scope) -> tuple[str, str, str] | None:
        """``(route template, operation, model name)`` of a request taken, else None."""
        found = hot_route(scope)
        if found is None:
            return None
        operation, name = found
        return _TEMPLATES[operation], operation, name

    def take_path(self, scope: Scope) -> tuple[str, str, str] | None:
        """:meth:`take` of a request whose headers the caller checked (a declared-length
        body, no chunked one, declared as ``application/json``): its method and path."""
        if scope["method"] != "POST" or scope.get("root_path"):
            return None
        path = scope["path"]
        taken = self._taken.get(path)
        if taken is not None:
            return taken
        found = _PATH.fullmatch(path)
        if found is None:
            return None
        operation = found.group(2)
        taken = _TEMPLATES[operation], operation, found.group(1)
        if len(self._taken) < _TAKEN_PATHS:  # a model's few paths; no more once full
            self._taken[path] = taken
        return taken

    async def serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        operation: str,
        name: str,
        routed_send: Send | None = None,
    ) -> int | None:
        """Answer the ``operation`` (predict, feedback or rank) of model ``name``: the
        status sent with ``send``, or None when the answer went out through
        ``routed_send`` (the route's or an error's answer; ``send`` when not given) or
        nobody was left to answer."""
        message = await receive()  # the usual case: the whole body in one message
        if message["type"] == "http.request" and not message.get("more_body", False):
            body: bytes | None = message.get("body", b"")
        else:
            body = await _read_body(receive, message)
        if body is None:
            return None  # nobody to answer
        if routed_send is None:
            routed_send = send
        parsed: Any = None
        context: list[float] | None = None
        if operation == "predict":
            # one context or a batch of number lists and nothing else: read by the kernel
            context = parse_row(body, MAX_CONTEXT_LENGTH)
            if context is None:
                rows = parse_rows(body, MAX_BATCH_LENGTH, MAX_CONTEXT_LENGTH)
                if rows is not None:
                    parsed = PredictBody(None, rows, None, None, None)
        if parsed is None and context is None:
            try:
                data: Any = orjson.loads(body)
            except orjson.JSONDecodeError:
                data = None  # the route's parser words the refusal
            parsed = _PARSERS[operation](data)
            if parsed is None:
                await self.route(scope, _replay(body, receive), routed_send)
                return None
        try:
            if context is not None:  # the usual predict: no body object, no branches
                content = orjson.dumps(await decide_context(self.view, name, context))
            elif isinstance(parsed, PredictBody):
                content = orjson.dumps(await decide(self.view, name, parsed))
            elif isinstance(parsed, RankBody):
                content = orjson.dumps(await rank_answer(self.view, name, parsed))
            else:
                await give_feedback(self.view, name, parsed)
                content = orjson.dumps({"status": "accepted", "event_id": parsed.event_id})
        except Exception as exc:
            answer = error_answer(Request(scope), exc)
            if answer is None:
                raise
            await answer(scope, receive, routed_send)
            return None
        headers = [_JSON, (b"content-length", b"%d" % len(content))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})
        return 200
