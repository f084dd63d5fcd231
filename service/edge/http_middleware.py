"""Pure ASGI middleware: API keys, body size limit, HTTP metrics, access log, JSON errors."""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.edge.asgi_errors import send_json_error, send_personalizer_error
from service.http.personalizer_errors import is_personalizer_path
from service.store.budget import enter_budget, leave_budget
from service.telemetry.metrics import ServiceMetrics

if TYPE_CHECKING:
    from service.edge.auth import ApiKeyAuth
    from service.edge.serve import HotPaths

#: the access log (``BANDITREE_ACCESS_LOG``): one JSON line per request
access_log = logging.getLogger("banditree.access")


class ServiceHttp:
    """The service's one ASGI middleware: API keys, body size limit, metrics, access log.

    One layer instead of one per concern: each layer is a coroutine frame and often a
    wrapped ``send``/``receive`` per request.  In order: requests are timed and counted
    by route template, method and status; ``/v1`` calls are checked for API keys
    (:class:`~service.edge.auth.ApiKeyAuth`); a body declared larger than
    ``max_body_bytes`` is answered 413 before routing, and a body without a declared
    length is counted as it streams in.  With ``access_log`` each request is logged
    as one JSON line on the ``banditree.access`` logger.  Each request waits on the store
    for at most ``store_budget_seconds`` in all (:mod:`service.store.budget`).  With
    ``hot``, the predict and feedback requests it takes are answered by it
    (:mod:`service.edge.serve`) instead of ``app``.  It is the outermost layer of the
    service's app (:class:`~service.edge.app.ServiceApp`), in front of FastAPI.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: ApiKeyAuth,
        metrics: ServiceMetrics,
        max_body_bytes: int,
        access_log: bool = False,
        store_budget_seconds: float | None = None,
        hot: HotPaths | None = None,
    ) -> None:
        self.app = app
        self.store_budget_seconds = store_budget_seconds
        self.hot = hot
        self.auth = auth
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.access_log = access_log
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

    def _too_large(self, size: str) -> str:
        return f"request body of {size} bytes exceeds max_body_bytes={self.max_body_bytes}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        template = "unmatched"

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if not await self.auth.refused(scope, send_with_status):
                limited = await self._limited(scope, receive, send_with_status)
                if limited is not None:
                    paths = self.hot
                    hot = None if paths is None else paths.take(scope)
                    budget = enter_budget(self.store_budget_seconds)  # as store_budget
                    try:
                        if paths is None or hot is None:
                            await self.app(scope, limited, send_with_status)
                        else:
                            template, operation, name = hot
                            await paths.serve(scope, limited, send_with_status, operation, name)
                    finally:
                        leave_budget(budget)
        finally:
            elapsed_seconds = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", None) or template
            requests, duration = self._series(template, scope["method"], status)
            # applied once per loop tick
            self.metrics.tick.inc_observe(requests, 1.0, duration, elapsed_seconds)
            if self.access_log:
                _log_access(scope, status, elapsed_seconds)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """``receive`` when only a fitting length is declared (the server reads no more
        than it), a counting ``receive`` otherwise, None after answering 413."""
        declared = chunked = False
        for key, value in scope["headers"]:
            if key == b"content-length":
                if not value.isdigit() or int(value) > self.max_body_bytes:
                    detail = self._too_large(value.decode())
                    if is_personalizer_path(scope["path"]):  # its clients read its shape
                        await send_personalizer_error(send, 413, detail)
                    else:
                        await send_json_error(send, 413, detail, "body")
                    return None
                declared = True
            elif key == b"transfer-encoding":
                chunked = True
        if declared and not chunked:
            return receive
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                raise HTTPException(413, self._too_large(f"more than {self.max_body_bytes}"))
            return message

        return limited_receive


def enable_access_log() -> None:
    """Send the access log's JSON lines to standard output (once per process)."""
    access_log.setLevel(logging.INFO)
    if not access_log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
        access_log.propagate = False


def _log_access(scope: Scope, status: int, elapsed_seconds: float) -> None:
    """One JSON line per request: time, method, path, status, duration, client address."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    client = scope.get("client")
    record = {
        "time": round(time.time(), 6),
        "method": scope["method"],
        "path": scope["path"],
        "status": status,
        "duration_ms": round(elapsed_seconds * 1e3, 3),
        "client": f"{client[0]}:{client[1]}" if client else None,
    }
    access_log.info(json.dumps(record))
