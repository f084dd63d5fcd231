"""Pure ASGI middleware: request body size limit, HTTP request metrics, JSON error answers."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.metrics import ServiceMetrics


async def send_json_error(
    send: Send, status: int, detail: str, field: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer ``{"detail", "field"}`` with ``status`` from middleware, before routing."""
    body = json.dumps({"detail": detail, "field": field}).encode()
    all_headers = [(b"content-type", b"application/json"), *headers]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Answer 413 when a request body exceeds ``max_body_bytes`` (declared or streamed)."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    def _message(self, size: str) -> str:
        return f"request body of {size} bytes exceeds max_body_bytes={self.max_body_bytes}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key == b"content-length":
                if not value.isdigit() or int(value) > self.max_body_bytes:
                    await send_json_error(send, 413, self._message(value.decode()), "body")
                    return
                break
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                raise HTTPException(413, self._message(f"more than {self.max_body_bytes}"))
            return message

        await self.app(scope, limited_receive, send)


class HttpMetrics:
    """Count requests and time them by route template, method and status."""

    def __init__(self, app: ASGIApp, *, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def _series(self, route: str, method: str, status: int) -> tuple[Any, Any]:
        key = (route, method, status)
        series = self._children.get(key)
        if series is None:
            series = (
                self.metrics.http_requests.labels(route, method, str(status)),
                self.metrics.http_duration.labels(route, method),
            )
            self._children[key] = series
        return series

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            requests, duration = self._series(template, scope["method"], status)
            requests.inc()
            duration.observe(time.perf_counter() - started)
