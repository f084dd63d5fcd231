"""The service's app: FastAPI behind one outermost layer that answers the hot paths."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from service.edge.auth import ApiKeyAuth
from service.edge.http_middleware import ServiceHttp
from service.edge.serve import HotPaths
from service.telemetry.metrics import ServiceMetrics


class ServiceApp(FastAPI):
    """A FastAPI app whose outermost ASGI layer is the service's front (:meth:`install_front`).

    FastAPI's own stack (its error and telemetry middleware, exception handlers, router)
    costs more per request than a decision, so the front runs before it: every HTTP
    request is checked (API key, body bound), timed, counted and logged there, the hot
    paths are answered there (:class:`~service.edge.serve.HotPaths`), and the rest goes
    on to FastAPI.  Lifespan events go to FastAPI directly.  It is still a FastAPI app
    (routes, ``state``, ``openapi()``, the docs), so every route stays documented.
    """

    _front: ServiceHttp | None = None

    def install_front(
        self,
        *,
        auth: ApiKeyAuth,
        metrics: ServiceMetrics,
        max_body_bytes: int,
        access_log: bool,
        store_budget_seconds: float | None,
        hot: bool = True,
    ) -> None:
        """Put the front in front of FastAPI; with ``hot`` it answers predict, feedback and rank."""
        self._front = ServiceHttp(
            self._fastapi,
            auth=auth,
            metrics=metrics,
            max_body_bytes=max_body_bytes,
            access_log=access_log,
            store_budget_seconds=store_budget_seconds,
            hot=HotPaths(self.state, self._fastapi) if hot else None,
        )

    async def _fastapi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling of a request."""
        await super().__call__(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        front = self._front
        if front is None or scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self  # as FastAPI sets it, for the answers given in front of it
        await front(scope, receive, send)
