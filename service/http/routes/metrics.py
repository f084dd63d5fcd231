"""``/metrics``: Prometheus text format, rendered off the request path.

The exposition is written by :class:`service.telemetry.metrics_render.ExpositionRenderer` (its cost
is bounded per model: an idle model's lines are not written again) on the event loop, a
slice of at most about :data:`SLICE_SECONDS` at a time, and gzipped in a worker thread;
concurrent scrapes share one rendering.  The text stays in the pieces it was written in
(:class:`service.telemetry.metrics_render.Exposition`): it is gzipped and sent a piece at a time,
never copied into one buffer on the loop.
:meth:`CachedExposition.refresh_loop`, started with the service, renders every
:data:`RENDER_GAP_FACTOR` renderings' time (at least every :data:`MIN_REFRESH_SECONDS`),
so a rendering exists before the first scrape and renderings take a bounded
share of the CPU.  A scrape answers a fresh rendering when rendering takes at most
:data:`FRESH_BUDGET_SECONDS`, else the latest one at once (thousands of models: figures a
few seconds old).  A scrape never waits more than :data:`FIRST_WAIT_SECONDS`: with no
rendering yet it then answers the process-wide series alone.  The process hands the
interpreter over every :data:`SWITCH_INTERVAL_SECONDS` so the event loop is not held up
long by worker threads (checkpoint loads).  Pending-event and checkpoint-age gauges are refreshed by the
maintenance loop (every ``sweep_interval_seconds``), never by a scrape, so a scrape does
not touch the store.
"""

from __future__ import annotations

import asyncio
import sys
import time
import zlib

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from starlette.types import Receive, Scope, Send

from service.telemetry.metrics_render import Exposition, ExpositionRenderer, registry_metrics

router = APIRouter(tags=["metrics"])

#: a rendering slower than this is refreshed in the background, not per scrape
FRESH_BUDGET_SECONDS = 0.1
#: a slow rendering starts again only this many of its own durations after the last one
RENDER_GAP_FACTOR = 4.0
#: ... and at least this long after it
MIN_REFRESH_SECONDS = 1.0
#: longest a scrape waits for a rendering before it answers what it has
FIRST_WAIT_SECONDS = 0.3
#: GIL hand-over interval while a rendering thread runs: the event loop waits at most this
#: long for the interpreter after each wake-up (Python's default is 5 ms)
SWITCH_INTERVAL_SECONDS = 0.0005
#: longest the rendering holds the event loop before it lets the loop run again
SLICE_SECONDS = 0.002


class CachedExposition:
    """The text exposition of ``registry``, rendered on the event loop in slices."""

    def __init__(self, registry: CollectorRegistry) -> None:
        metrics = registry_metrics(registry)
        self.renderer = ExpositionRenderer(metrics)
        # the series without a model label: a cheap answer before the first rendering
        self.process_renderer = ExpositionRenderer(
            [m for m in metrics if "model" not in m._labelnames]
        )
        self.body: Exposition | None = None
        self.gzipped: bytes | None = None  # the same body, gzip (set before ``body``)
        self.render_seconds = 0.0
        self._rendering: asyncio.Task[Exposition] | None = None

    async def _render(self) -> Exposition:
        started = time.perf_counter()
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        # on the event loop, a slice at a time: a thread running Python beside the loop
        # took the interpreter back at each of the loop's system calls (a request waits
        # for it a switch interval each time), and predictions stalled 60-100 ms behind
        # renderings of 10,000 models; a slice holds the loop up once, at most ~SLICE
        steps = self.renderer.rendering()
        while True:
            sliced = time.perf_counter() + SLICE_SECONDS
            try:
                while time.perf_counter() < sliced:
                    next(steps)
            except StopIteration as done:
                body: Exposition = done.value
                break
            await asyncio.sleep(0)
        # compressed off the loop (zlib lets go of the interpreter): 10,000 models are
        # about 60 MB of text and 3 MB of gzip
        self.gzipped = await asyncio.to_thread(gzip_pieces, body.pieces)
        self.render_seconds = time.perf_counter() - started
        self.body = body
        return body

    def _start(self) -> asyncio.Task[Exposition]:
        if self._rendering is None or self._rendering.done():
            self._rendering = asyncio.create_task(self._render())
        return self._rendering

    @property
    def slow(self) -> bool:
        """Whether renderings are refreshed in the background rather than per scrape."""
        return self.render_seconds > FRESH_BUDGET_SECONDS

    async def refresh_loop(self) -> None:
        """Render now, then keep a slow rendering fresh (run as a task for the service)."""
        while True:  # also while models are created: the first scrape finds a rendering
            await asyncio.shield(self._start())
            await asyncio.sleep(max(MIN_REFRESH_SECONDS, RENDER_GAP_FACTOR * self.render_seconds))

    async def latest(self) -> Exposition:
        """A fresh rendering when rendering is quick; else the latest, at once."""
        if self.body is not None and self.slow:
            return self.body
        try:
            async with asyncio.timeout(FIRST_WAIT_SECONDS):
                return await asyncio.shield(self._start())
        except TimeoutError:
            if self.body is not None:
                return self.body
            return await asyncio.to_thread(self.process_renderer.exposition)


@router.get("/metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Every metric of this process (gzip when the scraper accepts it, as Prometheus does)."""
    exposition: CachedExposition = request.app.state.exposition
    body = await exposition.latest()
    if body is exposition.body and exposition.gzipped is not None and _accepts_gzip(request):
        return Response(
            exposition.gzipped,
            media_type=CONTENT_TYPE_LATEST,
            headers={"content-encoding": "gzip", "vary": "accept-encoding"},
        )
    return PiecesResponse(body, headers={"vary": "accept-encoding"})


def gzip_pieces(pieces: list[bytes]) -> bytes:
    """``pieces`` as one gzip member (level 1, no timestamp), compressed a piece at a time:
    the text is never joined (a worker thread's call; zlib lets go of the interpreter)."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip header, mtime 0
    packed = [packer.compress(piece) for piece in pieces]
    packed.append(packer.flush())
    return b"".join(packed)  # about 3 MB for 10,000 models


class PiecesResponse(Response):
    """An exposition sent as its pieces, one body message each, with its full length."""

    media_type = CONTENT_TYPE_LATEST

    def __init__(self, exposition: Exposition, headers: dict[str, str]) -> None:
        super().__init__(b"", headers=headers)
        self.pieces = exposition.pieces
        self.headers["content-length"] = str(exposition.size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        for piece in self.pieces:
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()
