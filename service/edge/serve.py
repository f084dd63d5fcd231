"""Predict, feedback and rank answered in the app's outermost layer, before FastAPI.

FastAPI's own machinery per request (its error and telemetry middleware, routing,
dependency resolution, a pydantic model per body, response classes) costs several
times a whole decision.  :class:`HotPaths` answers ``POST /v1/models/{name}/predict``,
``/feedback`` and ``/rank`` with a declared-length JSON body itself, after
:class:`~service.edge.http_middleware.ServiceHttp` checked the API key and the body bound
and while it times, counts and logs the request: the body is parsed by ``orjson`` and
checked by hand (:mod:`service.edge.parse`), the route's own :func:`decide`,
:func:`give_feedback` or :func:`rank_answer` answers it, and an error it raises gets the answer of the app's
handlers (:func:`~service.http.errors.error_answer`).

A request these paths do not take as it stands (another content type, a chunked body,
a body that is not JSON or that the hand checks do not pass) goes on to the FastAPI
route with the body it sent, so every refusal is the route's own (same status, same
422 naming the field and the bound).  The routes stay in the app and in its OpenAPI
document.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.datastructures import State
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.domain.requests import PredictBody, RankBody
from service.edge.parse import feedback_body, predict_body, rank_body
from service.http.deps import MODEL_NAME_PATTERN
from service.http.errors import error_answer
from service.http.routes.decisions import decide, give_feedback
from service.http.routes.ranking import rank_answer

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


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away."""
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


class HotPaths:
    """Predict, feedback and rank of the app whose ``state`` they read; ``route`` is the app's
    FastAPI layer, which answers what they do not take."""

    def __init__(self, state: State, route: ASGIApp) -> None:
        self.state = state
        self.route = route

    @staticmethod
    def take(scope: Scope) -> tuple[str, str, str] | None:
        """``(route template, operation, model name)`` of a request taken, else None."""
        found = hot_route(scope)
        if found is None:
            return None
        operation, name = found
        return _TEMPLATES[operation], operation, name

    async def serve(
        self, scope: Scope, receive: Receive, send: Send, operation: str, name: str
    ) -> None:
        """Answer the ``operation`` (predict, feedback or rank) of model ``name``."""
        body = await _read_body(receive)
        if body is None:
            return  # nobody to answer
        try:
            data: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None  # the route's parser words the refusal
        parsed = _PARSERS[operation](data)
        if parsed is None:
            await self.route(scope, _replay(body, receive), send)
            return
        try:
            if isinstance(parsed, PredictBody):
                content = await decide(self.state, name, parsed)
            elif isinstance(parsed, RankBody):
                content = await rank_answer(self.state, name, parsed)
            else:
                await give_feedback(self.state, name, parsed)
                content = orjson.dumps({"status": "accepted", "event_id": parsed.event_id})
        except Exception as exc:
            answer = error_answer(Request(scope), exc)
            if answer is None:
                raise
            await answer(scope, receive, send)
            return
        headers = [_JSON, (b"content-length", b"%d" % len(content))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})
