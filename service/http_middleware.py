"""Pure ASGI middleware: request body size limit and HTTP request metrics."""

from __future__ import annotations

import json
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.metrics import ServiceMetrics


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
                    body = json.dumps({"detail": self._message(value.decode()), "field": "body"})
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 413,
                            "headers": [(b"content-type", b"application/json")],
                        }
                    )
                    await send({"type": "http.response.body", "body": body.encode()})
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
            method = scope["method"]
            self.metrics.http_requests.labels(template, method, str(status)).inc()
            self.metrics.http_duration.labels(template, method).observe(
                time.perf_counter() - started
            )
