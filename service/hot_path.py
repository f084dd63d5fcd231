"""The predict fast path: ``POST /v1/models/{name}/predict`` answered in front of the router.

FastAPI's routing, dependency resolution, body parsing and response classes cost more
per request than a whole decision.  :class:`~service.http_middleware.ServiceHttp`
(after the API-key check and the body bound) hands a predict with a declared-length
JSON body here: the body is parsed by ``orjson`` and validated by the same
:class:`~service.schemas.PredictCreate` model, the same
:func:`~service.routes.decisions.decide` answers it, and an error it raises gets the
answer of the app's own handlers (:func:`~service.errors.error_answer`).

A request this path does not take as it stands (another content type, a chunked body,
a body that is not JSON or not a valid ``PredictCreate``) goes on to the FastAPI route
with the body it sent, so every refusal is the route's own (same status, same 422
detail).  The route stays in the app and in the OpenAPI document.
"""

from __future__ import annotations

import re

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.deps import MODEL_NAME_PATTERN
from service.errors import error_answer
from service.routes.decisions import decide
from service.schemas import PredictCreate

#: the route template the fast path answers (the ``route`` label of the HTTP metrics)
PREDICT_ROUTE = "/v1/models/{name}/predict"
_PATH = re.compile("/v1/models/(" + MODEL_NAME_PATTERN.strip("^$") + ")/predict")
_JSON_HEADERS = [(b"content-type", b"application/json")]


def predict_name(scope: Scope) -> str | None:
    """The model name of a predict request the fast path can take, else None."""
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
    return found.group(1) if json_body and declared else None


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away."""
    chunks = []
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


async def serve_predict(
    scope: Scope, receive: Receive, send: Send, *, name: str, route: ASGIApp
) -> None:
    """Answer the predict of ``name``, or pass it on to ``route`` (the FastAPI app)."""
    body = await _read_body(receive)
    if body is None:
        return  # nobody to answer
    try:
        parsed = PredictCreate.model_validate(orjson.loads(body))
    except (orjson.JSONDecodeError, ValidationError):
        await route(scope, _replay(body, receive), send)
        return
    try:
        content = await decide(scope["app"].state, name, parsed)
    except Exception as exc:
        answer = error_answer(Request(scope), exc)
        if answer is None:
            raise
        await answer(scope, receive, send)
        return
    headers = [*_JSON_HEADERS, (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": content})
