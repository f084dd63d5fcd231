"""``/metrics``: Prometheus text format, rendered off the event loop.

Rendering is proportional to the number of series (about 70 per model), so it runs in
a worker thread and concurrent scrapes share one rendering.  When a rendering takes
longer than :data:`FRESH_BUDGET_SECONDS` (thousands of models), a scrape answers the
last complete one at once and starts the next in the background (at most every
:data:`RENDER_GAP_FACTOR` renderings' time): the figures are then a few seconds old.
The process hands the interpreter over every :data:`SWITCH_INTERVAL_SECONDS` so the
event loop is not held up by the rendering thread.  Pending-event and checkpoint-age gauges are refreshed by
the maintenance loop (every ``sweep_interval_seconds``), never by a scrape, so a scrape
does not touch the store.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

router = APIRouter(tags=["metrics"])

#: a rendering slower than this is served from the previous one while it refreshes
FRESH_BUDGET_SECONDS = 0.1
#: a slow rendering starts again only this many of its own durations after the last one
RENDER_GAP_FACTOR = 4.0
#: GIL hand-over interval while a rendering thread runs: the event loop waits at most this
#: long for the interpreter after each wake-up (Python's default is 5 ms)
SWITCH_INTERVAL_SECONDS = 0.0005


class CachedExposition:
    """The text exposition of ``registry``, rendered in a worker thread."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.body: bytes | None = None
        self.render_seconds = 0.0
        self._rendering: asyncio.Task[bytes] | None = None
        self._rendered_at = 0.0

    def _render(self) -> bytes:
        started = time.perf_counter()
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        # the rendering allocates hundreds of thousands of short-lived, acyclic objects:
        # without this they would set off full collections that pause the event loop too
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            body = generate_latest(self.registry)
        finally:
            if gc_was_enabled:
                gc.enable()
        self.render_seconds = time.perf_counter() - started
        self.body, self._rendered_at = body, time.monotonic()
        return body

    def _start(self) -> asyncio.Task[bytes]:
        if self._rendering is None or self._rendering.done():
            self._rendering = asyncio.create_task(asyncio.to_thread(self._render))
        return self._rendering

    async def latest(self) -> bytes:
        """A fresh rendering, or the previous one when rendering is slow (then refreshed).

        A slow rendering is started at most every ``RENDER_GAP_FACTOR`` times its own
        duration, so the rendering thread takes a bounded share of the CPU.
        """
        if self.body is not None and self.render_seconds > FRESH_BUDGET_SECONDS:
            gap = RENDER_GAP_FACTOR * self.render_seconds
            if time.monotonic() - self._rendered_at >= gap:
                self._start()
            return self.body
        return await asyncio.shield(self._start())


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Every metric of this process."""
    exposition: CachedExposition = request.app.state.exposition
    return Response(await exposition.latest(), media_type=CONTENT_TYPE_LATEST)
