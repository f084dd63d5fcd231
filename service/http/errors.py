"""One error model for every 4xx/5xx answer, the handlers that produce it, its OpenAPI entries.

The domain (registry and runtimes) raises :mod:`service.domain.errors`; this module alone
maps them to HTTP (:data:`DOMAIN_STATUS`).  Every error body is :class:`ErrorPublic`: ``detail`` (a message naming the field and the
bound), ``field`` (the request field at fault, or null) and, for 422 validation errors,
``errors`` (one entry per bad field).  A store that cannot be reached (Redis refusing or
timing out, SQLite locked, a file system error) answers 503 from one handler here,
whichever route met it.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable
from typing import Any

import orjson
import redis.exceptions
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import compile_path

from banditree.learners import InvalidInput
from service.domain.errors import (
    BatchTooLarge,
    Conflict,
    DecisionExpired,
    DomainError,
    FeedbackDuplicate,
    InvalidRequest,
    NotFound,
    Unavailable,
    UnknownDecision,
)
from service.http.personalizer_errors import (
    PersonalizerError,
    is_personalizer_path,
    personalizer_error,
    personalizer_status,
)
from service.store.base import StoreUnavailable

log = logging.getLogger("banditree.service")


class ServiceError(Exception):
    """An HTTP answer other than success: ``status``, a ``detail`` message, the ``field``."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field


#: the HTTP status of each domain error (the nearest class along its MRO wins)
DOMAIN_STATUS: dict[type[DomainError], int] = {
    NotFound: 404,
    UnknownDecision: 404,
    Conflict: 409,
    FeedbackDuplicate: 409,
    DecisionExpired: 410,
    InvalidRequest: 422,
    BatchTooLarge: 413,
    Unavailable: 503,
}


def domain_status(exc: DomainError) -> int:
    """The status that answers ``exc``: its class's, or its nearest base class's."""
    for cls in type(exc).__mro__:
        status = DOMAIN_STATUS.get(cls)
        if status is not None:
            return status
    return 500


class FieldError(BaseModel):
    """One bad field of a 422 answer."""

    field: str
    message: str


class ErrorPublic(BaseModel):
    """The body of every 4xx/5xx answer."""

    detail: str
    field: str | None = None
    errors: list[FieldError] | None = None


#: exceptions that mean "the store is unreachable now", whatever route meets them
STORE_ERRORS: tuple[type[Exception], ...] = (
    StoreUnavailable,
    # the Redis store maps every failure and error reply to StoreUnavailable itself; a
    # redis-py error met elsewhere (LOADING, READONLY, OOM, any reply) is the same: 503
    redis.exceptions.RedisError,
    sqlite3.OperationalError,
    OSError,  # a full disk or a failing file system under the embedded store
)

_HEADERS = {
    401: ("WWW-Authenticate", "always `Bearer`"),
    405: ("Allow", "the methods this path serves"),
    503: ("Retry-After", "seconds to wait before retrying"),
}
_DESCRIPTIONS = {
    400: "The body could not be parsed (nested too deep for the JSON parser).",
    401: "Missing or unknown API key (`Authorization: Bearer <key>`).",
    403: "The key lacks the role this route needs (admin; predict; read) or this model.",
    404: "Unknown model, event id or checkpoint version.",
    405: "Method not allowed on this path; `Allow` lists the methods that are.",
    409: "Conflict: the model exists, the model cap is reached, feedback was already given, "
    "or the event id given belongs to a settled decision.",
    410: "The decision expired before its feedback arrived.",
    413: "The body, the batch or the answer is larger than its configured bound.",
    431: "More request header lines than the server takes (100).",
    422: "A field is invalid; `field` and `errors` name it and the bound.",
    503: "The store cannot be reached now; retry later.",
}


def error_json(status: int, detail: str, field: str | None = None, **extra: Any) -> JSONResponse:
    """An :class:`ErrorPublic` answer; a 503 says when to retry (``Retry-After``)."""
    headers = {"Retry-After": "1"} if status == 503 else None
    return JSONResponse(
        {"detail": detail, "field": field, **extra}, status_code=status, headers=headers
    )


def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return error_json(exc.status, exc.detail, exc.field)


def _domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    return error_json(domain_status(exc), exc.detail, exc.field)


def _invalid_input(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidInput)
    return error_json(422, str(exc), exc.field)


def _store_error(request: Request, exc: Exception) -> JSONResponse:
    log.error("%s %s: store unavailable: %r", request.method, request.url.path, exc)
    return error_json(503, "the store cannot be reached now; try again", None)


#: a rule across a body's fields that names the one it refuses: "Value error, kind: ..."
_NAMED_RULE = re.compile(r"Value error, ([a-z_]+(?:\.[A-Za-z0-9_]+)*): ")


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad field and its bound (a body that is not JSON included).

    The offending input is not echoed (it may be NaN or large).
    """
    assert isinstance(exc, RequestValidationError)
    errors = []
    for error in exc.errors():
        if error.get("type") == "default_factory_not_called":
            continue  # a default that depends on a field already reported (kind on task)
        loc = [str(part) for part in error.get("loc", ()) if part != "body"]
        message = str(error.get("msg"))
        field = ".".join(loc) or "body"
        named = _NAMED_RULE.match(message) if not loc else None
        if named is not None:  # a body-wide rule naming the field: field, and its words
            field, message = named.group(1), message[named.end() :]
        if loc and loc[0] in ("path", "query", "header") and len(loc) > 1:
            field = ".".join(loc[1:])
        errors.append({"field": field, "message": message})
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return error_json(422, detail, errors[0]["field"] if errors else None, errors=errors)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some operation of the app serves at this request's path."""
    path = request.url.path
    allowed: list[tuple[re.Pattern[str], set[str]]] = request.app.state.allowed_methods
    return sorted({m for pattern, methods in allowed if pattern.match(path) for m in methods})


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own answers (404 unknown path, 405, 413 while reading) in the error model."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
    response = error_json(
        exc.status_code, str(exc.detail), "body" if exc.status_code == 413 else None
    )
    response.headers.update(headers)
    return response


Handler = Callable[[Request, Exception], JSONResponse]

#: headers an error answer keeps when it is put in Personalizer's shape
_KEPT_HEADERS = ("retry-after", "allow", "www-authenticate")


def _personalizer_shape(handler: Handler) -> Handler:
    """``handler``, answering in Personalizer's error shape on its routes (422 as 400)."""

    def answer(request: Request, exc: Exception) -> JSONResponse:
        response = handler(request, exc)
        if not is_personalizer_path(request.scope.get("path", "")):
            return response
        detail = str(orjson.loads(bytes(response.body))["detail"])
        kept = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
        return personalizer_error(response.status_code, detail, kept)

    return answer


#: exception type -> the handler that answers it (looked up along the exception's MRO)
ERROR_HANDLERS: dict[type[Exception], Handler] = {
    error: _personalizer_shape(handler)
    for error, handler in {
        ServiceError: _service_error,
        DomainError: _domain_error,
        InvalidInput: _invalid_input,
        RequestValidationError: _validation_error,
        HTTPException: _http_error,
        **dict.fromkeys(STORE_ERRORS, _store_error),
    }.items()
}


def error_answer(request: Request, exc: Exception) -> JSONResponse | None:
    """The answer to ``exc`` that the app's handlers give, or None for an unhandled error.

    For code that answers outside FastAPI's routing (the predict fast path).
    """
    for cls in type(exc).__mro__:
        handler = ERROR_HANDLERS.get(cls)
        if handler is not None:
            return handler(request, exc)
    return None


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with :class:`ErrorPublic`."""
    for error, handler in ERROR_HANDLERS.items():
        app.add_exception_handler(error, handler)


def _statuses(route: APIRoute, admin_routes: set[tuple[str, str]]) -> set[int]:
    """The error statuses one operation can answer."""
    method = next(iter(route.methods or {"GET"}))
    path = route.path
    statuses = {405, 413, 431}  # 431: more header lines than ``banditree serve`` takes
    if path.startswith("/v1/"):
        statuses |= {401, 503}
    if "{name}" in path:
        statuses.add(422)  # the name does not match its pattern
        if method != "PUT":
            statuses.add(404)
    if (method, path) in admin_routes or path.startswith("/v1/models/{name}"):
        statuses.add(403)  # the admin role, or a scoped key without this role or model
    if route.body_field is not None:
        statuses |= {400, 422}
    if route.dependant.query_params:
        statuses.add(422)  # a query parameter out of its bound (for example ``view``)
    if method in ("PUT", "PATCH"):
        statuses.add(409)  # the name is taken, the model cap is reached, or no apprentice
    if path.endswith(("/feedback", "/activate", "/reward_multi_slot", "/activate_multi_slot")):
        statuses |= {409, 410}
    if method == "POST" and path.endswith("/evaluations"):
        statuses.add(409)  # the model's evaluations held are all still running
    if path.endswith(("/rank", "/rank_multi_slot", "/predict")):
        statuses.add(409)  # the event id given is already used (and settled)
    if path == "/metrics":
        statuses.add(401)  # with BANDITREE_METRICS_KEY set
    if path == "/readyz":
        statuses.add(503)
    return statuses


def document_errors(
    app: FastAPI, routers: list[APIRouter], admin_routes: set[tuple[str, str]]
) -> None:
    """Declare, on every operation, the error statuses it can answer with :class:`ErrorPublic`.

    Call before the routers are included.  Also records, for 405 answers, which methods
    each path serves (``Allow`` names all of them, not only the first route's).
    """
    allowed: dict[str, set[str]] = {}
    for router in routers:
        for route in router.routes:
            if not isinstance(route, APIRoute):
                continue
            allowed.setdefault(route.path, set()).update(route.methods or ())
            statuses = _statuses(route, admin_routes)
            model: type[BaseModel] = ErrorPublic
            if is_personalizer_path(route.path):  # Personalizer's error body; 422 is 400
                statuses = {personalizer_status(s) for s in statuses} | {400, 409, 410}
                model = PersonalizerError
            for status in sorted(statuses):
                description = _DESCRIPTIONS[status]
                if model is PersonalizerError and status == 400:
                    description = "A field is invalid: the message names it and the bound."
                entry: dict[str, Any] = {"model": model, "description": description}
                header = _HEADERS.get(status)
                if header is not None:
                    entry["headers"] = {
                        header[0]: {"description": header[1], "schema": {"type": "string"}}
                    }
                route.responses.setdefault(status, entry)
    for methods in allowed.values():
        if "GET" in methods:
            methods.add("HEAD")
    app.state.allowed_methods = [
        (compile_path(path)[0], methods) for path, methods in allowed.items()
    ]
