"""The app factory: ``create_app(settings)`` builds a FastAPI app; the lifespan opens the store."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from banditree import __version__
from banditree.learners import InvalidInput
from service.auth import ApiKeyAuth
from service.errors import ServiceError
from service.http_middleware import BodyLimit, HttpMetrics
from service.metrics import ServiceMetrics
from service.registry import ModelRegistry
from service.routes import apprentice, checkpoints, decisions, health, metrics, models
from service.routes import log as log_route
from service.settings import Settings, load_settings
from service.store import open_store

log = logging.getLogger("banditree.service")


async def _maintain(registry: ModelRegistry, interval_seconds: float) -> None:
    """Expire overdue events and run timed checkpoints, forever."""
    while True:
        await asyncio.sleep(interval_seconds)
        await registry.sweep()


def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return JSONResponse({"detail": exc.detail, "field": exc.field}, status_code=exc.status)


def _invalid_input(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidInput)
    return JSONResponse({"detail": str(exc), "field": exc.field}, status_code=422)


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 naming each bad field and its bound; the offending input is not echoed (it may be NaN)."""
    assert isinstance(exc, RequestValidationError)
    errors = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ()) if part != "body"]
        errors.append({"field": ".".join(loc) or "body", "message": str(error.get("msg"))})
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return JSONResponse(
        {"detail": detail, "field": errors[0]["field"] if errors else None, "errors": errors},
        status_code=422,
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    """A service app for ``settings`` (default: from the ``BANDITREE_*`` environment)."""
    settings = settings if settings is not None else load_settings()
    service_metrics = ServiceMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = open_store(settings)
        await store.ping()
        registry = ModelRegistry(store=store, settings=settings, metrics=service_metrics)
        app.state.registry = registry
        if not settings.auth_enabled:
            log.warning("no API keys configured: every route is open (set BANDITREE_API_KEYS)")
        await registry.restore_all()
        log.info(
            "serving %d models with the %s store", len(registry.runtimes), type(store).__name__
        )
        maintenance = asyncio.create_task(_maintain(registry, settings.sweep_interval_seconds))
        try:
            yield
        finally:
            maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await maintenance
            await registry.close()
            await store.close()

    app = FastAPI(
        title="banditree",
        version=__version__,
        description="Online contextual bandits on hard oblique trees trained by gradient.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = service_metrics
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(InvalidInput, _invalid_input)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for router in (decisions.router, models.router, checkpoints.router, health.router):
        app.include_router(router)
    app.include_router(metrics.router)
    app.include_router(log_route.router)
    app.include_router(apprentice.router)
    app.add_middleware(BodyLimit, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(ApiKeyAuth, settings=settings)
    app.add_middleware(HttpMetrics, metrics=service_metrics)
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (settings from the environment).

    A serving process answers many small requests concurrently, so torch's intra-op
    thread pool only adds contention (a TEL round took ~100x longer with two threads on
    a busy 2-core machine): each worker process uses one torch thread.
    """
    import torch

    torch.set_num_threads(1)
    return create_app()
