"""JSON error answers sent from ASGI middleware, before any route runs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import Send

from service.http.personalizer_errors import error_body


async def send_json_error(
    send: Send, status: int, detail: str, field: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``{"detail", "field"}`` with ``status`` from middleware, before routing."""
    body = json.dumps({"detail": detail, "field": field}).encode()
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def send_personalizer_error(
    send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer Personalizer's ``{"error": {"code", "message"}}`` with ``status`` from middleware."""
    body = error_body(status, message)
    all_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})
