"""The app factory: ``create_app(settings)`` builds a FastAPI app; the lifespan opens the store."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig

from banditree import __version__, kernel
from service.domain.jobs import Jobs
from service.domain.registry import ModelRegistry
from service.domain.runtime.tasks import pause_after_pass, stop_tasks
from service.domain.series import ModelSeries
from service.edge.app import ADMIN_OPERATIONS, ApiKeyAuth, ServiceApp, enable_access_log
from service.http.console_page import install_console
from service.http.docs_page import install_docs
from service.http.errors import document_errors, install_error_handlers
from service.http.openapi_links import add_links
from service.http.routes import (
    apprentice,
    checkpoints,
    console,
    decisions,
    evaluations,
    health,
    metrics,
    models,
    personalizer,
    personalizer_root,
    ranking,
    ranking_slots,
)
from service.http.routes import log as log_route
from service.settings import Settings, load_settings
from service.store import Store, StoreUnavailable, open_store
from service.telemetry.loop_lag import watch_loop_lag
from service.telemetry.metrics import ServiceMetrics

log = logging.getLogger("banditree.service")
_NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}


async def _maintain(registry: ModelRegistry, interval_seconds: float) -> None:
    """Expire overdue decisions and refresh the per-model gauges, forever.

    ``/metrics`` only renders what is set here, so a scrape never waits on the store.
    The pause after a pass grows with the pass's own cost (thousands of models), not
    with the time its expiries took: those are as many as decisions arrived, and
    stretching the pause by them would let unanswered decisions pile up again.
    """
    wait = interval_seconds
    while True:
        await asyncio.sleep(wait)
        started = time.monotonic()
        expiring = await registry.sweep()
        await registry.refresh_gauges()
        wait = pause_after_pass(time.monotonic() - started - expiring, interval_seconds)


async def _discover(registry: ModelRegistry, interval_seconds: float) -> None:
    """Pick up models created (and drop those deleted) by other processes, forever.

    Also writes the models back when the store lost its data (checked at once when a
    store call found a model gone).
    """
    wait = interval_seconds
    while True:
        await registry.discovery_due(wait)
        started = time.monotonic()
        try:
            await registry.discover()
        except StoreUnavailable as err:
            log.warning("model discovery: %s", err)
        except Exception:  # the loop must outlive any one failure
            log.exception("model discovery failed; going on")
        wait = pause_after_pass(time.monotonic() - started, interval_seconds)


async def _shut_down(
    registry: ModelRegistry, store: Store, tasks: list[asyncio.Task[None]], seconds: float
) -> None:
    """Stop the loops, let the learners publish and close the store, in ``seconds`` at most.

    Whatever is still running at the deadline is logged and left: the process exits, and
    nothing acknowledged is lost (feedback is in the store's log before its answer).
    """
    deadline = asyncio.get_running_loop().time() + seconds
    await stop_tasks(tasks, seconds / 4)
    try:
        async with asyncio.timeout_at(deadline):
            await registry.close()
    except TimeoutError:
        log.error("the learners did not stop within %.1f s; exiting anyway", seconds)
    try:
        async with asyncio.timeout(max(1.0, seconds / 4)):
            await store.close()
    except TimeoutError:
        log.error("the store did not close in time; exiting anyway")


def _openapi_with_settings(app: ServiceApp, settings: Settings) -> None:
    """The OpenAPI document states the configured batch bound and, with keys, the security."""

    def document(schema: dict[str, Any]) -> None:
        contexts = schema["components"]["schemas"]["PredictCreate"]["properties"]["contexts"]
        contexts["maxItems"] = settings.max_batch
        personalizer.document_personalizer(schema)
        if settings.auth_enabled or settings.metrics_key:  # `Authorization: Bearer <key>`
            schema["components"]["securitySchemes"] = {
                "apiKey": {"type": "http", "scheme": "bearer"}
            }
            for path, operations in schema["paths"].items():
                v1 = path.startswith("/v1/") and settings.auth_enabled
                if v1 or (path == "/metrics" and settings.metrics_key):
                    for operation in operations.values():
                        operation["security"] = [{"apiKey": []}]

    app.document_hook = document


def check_kernel() -> str:
    """The active kernel's name, logged; raise when the compiled one is asked for and missing.

    No silent fallback (``docs/decisions/service-kernel.md``): a process without its
    compiled kernel refuses to start unless ``BANDITREE_KERNEL=reference`` asks for the
    numpy path on purpose.

    Raises
    ------
    banditree.kernel.KernelUnavailable
        When ``BANDITREE_KERNEL`` is unset or ``native`` and the compiled module does not
        import, or when it names neither path.
    """
    if kernel.ACTIVE == "unavailable":
        log.error(
            "kernel unavailable: %s; refusing to start (set %s=reference to serve the "
            "numpy reference on purpose)", kernel.IMPORT_ERROR, kernel.ENV,
        )  # fmt: skip
        kernel.native()  # raises KernelUnavailable
    if kernel.ACTIVE == "reference":
        log.warning("kernel: reference (%s=reference: the numpy path, slower)", kernel.ENV)
    else:
        log.info("kernel: native (the compiled kernel)")
    return kernel.ACTIVE


def create_app(settings: Settings | None = None) -> FastAPI:
    """A service app for ``settings`` (default: from the ``BANDITREE_*`` environment)."""
    settings = settings if settings is not None else load_settings()
    service_metrics = ServiceMetrics(max_model_series=settings.metrics_max_models)
    service_metrics.kernel.labels(kernel=check_kernel()).set(1)
    if settings.library_paths:  # a measuring setup, said at start
        log.warning(
            "BANDITREE_LIBRARY_PATHS: %s on the library's way (docs/decisions)",
            ",".join(settings.library_paths),
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = open_store(settings)
        await store.ping()
        with contextlib.suppress(StoreUnavailable):  # a warning only: never stops the start
            for warning in await store.durability_warnings():
                log.warning("%s", warning)
        registry = ModelRegistry(store=store, settings=settings, metrics=service_metrics)
        app.state.registry = registry
        app.state.jobs = Jobs()  # evaluations and feature importances (Personalizer's)
        app.state.series = ModelSeries()  # the console's rates and loss trends
        if not settings.auth_enabled:
            log.warning("no API keys configured: every route is open (set BANDITREE_API_KEYS)")
        await registry.start()
        log.info(
            "role %s: serving %d and learning %d models with the %s store",
            settings.role, len(registry.runtimes), len(registry.learners), type(store).__name__,
        )  # fmt: skip
        tasks = [
            asyncio.create_task(_maintain(registry, settings.sweep_interval_seconds)),
            asyncio.create_task(_discover(registry, settings.snapshot_poll_seconds)),
            # /metrics rendered off the request path from the first scrape
            asyncio.create_task(app.state.exposition.refresh_loop()),
            asyncio.create_task(watch_loop_lag(service_metrics.loop_lag)),
            asyncio.create_task(
                app.state.series.run(lambda: registry.runtimes, settings.series_sample_seconds)
            ),
        ]
        try:
            yield
        finally:
            await app.state.jobs.close()
            await _shut_down(registry, store, tasks, settings.shutdown_seconds)

    app = ServiceApp(
        title="banditree",
        version=__version__,
        description="Online contextual bandits on hard oblique trees trained by gradient.",
        lifespan=lifespan,
        docs_url=None,  # served from local assets by install_docs, not a CDN
        redoc_url=None,
        # the service's own metrics are Prometheus's; FastAPI's OpenTelemetry otherwise
        # looks up the global providers on every request (docs/decisions/0001)
        telemetry=None if settings.opentelemetry else _NO_TELEMETRY,
    )
    app.state.settings = settings
    app.state.metrics = service_metrics
    app.state.exposition = metrics.CachedExposition(service_metrics.registry)
    app.state.export_slots = asyncio.Semaphore(1)  # one tree export in memory at a time
    install_error_handlers(app)
    routers = [
        decisions.router, models.router, checkpoints.router, health.router, metrics.router,
        log_route.router, apprentice.router, ranking.router, ranking_slots.router,
        personalizer.router, personalizer_root.router, console.router, evaluations.router,
    ]  # fmt: skip
    document_errors(app, routers, set(ADMIN_OPERATIONS))
    add_links(routers)
    for router in routers:
        app.include_router(router)
    _openapi_with_settings(app, settings)
    install_docs(app)
    install_console(app)
    if settings.access_log:
        enable_access_log()
    app.install_front(
        auth=ApiKeyAuth(settings),
        metrics=service_metrics,
        max_body_bytes=settings.max_body_bytes,
        access_log=settings.access_log,
        store_budget_seconds=settings.store_budget_seconds or 2 * settings.redis_timeout_seconds,
        # with OpenTelemetry on, every request goes through FastAPI's traced stack
        hot=not settings.opentelemetry and "front" not in settings.library_paths,
    )
    return app


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (settings from the environment).

    Serving runs on numpy and never imports torch.  Where something in the process has
    loaded it, its intra-op thread pool only adds contention for many small concurrent
    requests (``docs/decisions/0007-event-loop-garbage.md``), so it is held to one
    thread.  CPython's collector keeps its defaults (new models' objects are frozen by
    :class:`service.domain.runtime.heap.HeapFreezer`).
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    return create_app()
