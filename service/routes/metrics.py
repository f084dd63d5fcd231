"""``/metrics``: Prometheus text format, rendered off the event loop.

Rendering is proportional to the number of series (about 70 per model), so it runs in
a worker thread and concurrent scrapes share one rendering.  When a rendering takes
longer than :data:`FRESH_BUDGET_SECONDS` (thousands of models), a scrape answers the
last complete one at once and starts the next in the background: the figures are then
at most one rendering old.  Pending-event and checkpoint-age gauges are refreshed by
the maintenance loop (every ``sweep_interval_seconds``), never by a scrape, so a scrape
does not touch the store.
"""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

router = APIRouter(tags=["metrics"])

#: a rendering slower than this is served from the previous one while it refreshes
FRESH_BUDGET_SECONDS = 0.1


class CachedExposition:
    """The text exposition of ``registry``, rendered in a worker thread."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.body: bytes | None = None
        self.render_seconds = 0.0
        self._rendering: asyncio.Task[bytes] | None = None

    def _render(self) -> bytes:
        started = time.perf_counter()
        body = generate_latest(self.registry)
        self.render_seconds = time.perf_counter() - started
        self.body = body
        return body

    def _start(self) -> asyncio.Task[bytes]:
        if self._rendering is None or self._rendering.done():
            self._rendering = asyncio.create_task(asyncio.to_thread(self._render))
        return self._rendering

    async def latest(self) -> bytes:
        """A fresh rendering, or the previous one when rendering is slow (then refreshed)."""
        if self.body is not None and self.render_seconds > FRESH_BUDGET_SECONDS:
            self._start()
            return self.body
        return await asyncio.shield(self._start())


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Every metric of this process."""
    exposition: CachedExposition = request.app.state.exposition
    return Response(await exposition.latest(), media_type=CONTENT_TYPE_LATEST)
