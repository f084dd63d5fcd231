"""Personalizer's error body, ``{"error": {"code", "message"}}``, for its routes.

The routes under ``/v1/models/{name}/personalizer/`` answer every refusal in this shape
(Personalizer's clients read it), from the route itself, from the app's error handlers
(a name or event id that fails its pattern: 400, as Personalizer answers a bad request,
where the other routes answer 422) and from middleware (a missing key, a body too large).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from fastapi.responses import JSONResponse
from pydantic import BaseModel

#: Personalizer's error code for each status these routes answer
CODES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "ResourceNotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "EventExpired",
    413: "PayloadTooLarge",
    503: "ServiceUnavailable",
}


class PersonalizerErrorDetail(BaseModel):
    """What went wrong: Personalizer's ``code`` and a ``message`` naming the field and bound."""

    code: str
    message: str


class PersonalizerError(BaseModel):
    """The body of every 4xx/5xx answer of the Personalizer-compatible routes."""

    error: PersonalizerErrorDetail


def is_personalizer_path(path: str) -> bool:
    """Whether ``path`` is one of the Personalizer-compatible routes."""
    return "/personalizer/" in path


def personalizer_status(status: int) -> int:
    """The status Personalizer answers where the other routes answer ``status`` (422: 400)."""
    return 400 if status == 422 else status


def error_body(status: int, message: str) -> bytes:
    return orjson.dumps({"error": {"code": CODES.get(status, "BadRequest"), "message": message}})


def personalizer_error(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """Personalizer's error answer (a 503 says when to retry, as every 503 does)."""
    status = personalizer_status(status)
    headers = {**({"Retry-After": "1"} if status == 503 else {}), **(headers or {})}
    content = orjson.loads(error_body(status, message))
    return JSONResponse(content, status_code=status, headers=headers)
