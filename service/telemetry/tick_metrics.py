"""Prometheus updates of the hot paths, gathered per event-loop tick and applied once.

Each ``Counter.inc`` and ``Histogram.observe`` of ``prometheus_client`` takes a lock,
several per request on the predict path.  :class:`TickMetrics` gathers a tick's increments as
plain numbers (a counter's in one sum, a histogram's observations in one list) and
applies them in one callback at the end of the tick: a counter gets one ``inc`` of the
sum, a histogram one increment of its sum and of each bucket that was hit (the same
totals as one ``observe`` per value, which Prometheus's cumulative semantics allow).
A scrape renders at most one tick behind; nothing is lost, as the callback is queued
before the request that gathered the update answers.  Outside a running event loop an
update is applied at once.  Each :class:`~service.telemetry.metrics.ServiceMetrics` has its own
(``tick``): an app's requests run on one event loop.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from typing import Any


def observe_all(histogram: Any, values: list[float]) -> None:
    """``histogram.observe(v)`` for each of ``values``, with one update of each value hit.

    ``histogram`` is a labelled child of a ``prometheus_client`` Histogram.  Where its
    bucket layout is not the one this reads (another client version), it observes
    each value in turn.
    """
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for value in values:
            histogram.observe(value)
        return
    hits: dict[int, int] = {}
    for value in values:
        if value == value:  # NaN falls in no bucket, as with observe
            index = bisect_left(bounds, value)  # the first bucket with value <= its bound
            hits[index] = hits.get(index, 0) + 1
    total.inc(sum(values))
    for index, count in hits.items():
        buckets[index].inc(count)


def observe_counted(histogram: Any, observed: list[tuple[float, int]]) -> None:
    """``histogram.observe(v)`` ``n`` times for each ``(v, n)`` of ``observed``, with one
    update of each bucket hit (what :func:`observe_all` of the values repeated does, but
    one step a value rather than one a repetition: a learner observes each chunk's
    entries at their mean time)."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for value, count in observed:
            for _ in range(count):
                histogram.observe(value)
        return
    hits: dict[int, int] = {}
    for value, count in observed:
        if value == value and count > 0:  # NaN falls in no bucket, as with observe
            index = bisect_left(bounds, value)
            hits[index] = hits.get(index, 0) + count
    total.inc(sum(value * count for value, count in observed if count > 0))
    for index, count in hits.items():
        buckets[index].inc(count)


class TickMetrics:
    """Counter increments and histogram observations of one tick, applied at its end."""

    def __init__(self) -> None:
        self._counts: dict[Any, float] = {}
        self._observed: dict[Any, list[float]] = {}
        self._queued_on: asyncio.AbstractEventLoop | None = None  # where flush is queued

    def inc(self, counter: Any, amount: float = 1.0) -> None:
        """``counter.inc(amount)`` (a labelled Counter child), at the end of this tick."""
        counts = self._counts
        counts[counter] = counts.get(counter, 0.0) + amount
        self._queue()

    def inc_observe(self, counter: Any, amount: float, histogram: Any, value: float) -> None:
        """:meth:`inc` and :meth:`observe` together (one check of the queued flush)."""
        counts = self._counts
        counts[counter] = counts.get(counter, 0.0) + amount
        observed = self._observed.get(histogram)
        if observed is None:
            self._observed[histogram] = [value]
        else:
            observed.append(value)
        self._queue()

    def observe(self, histogram: Any, value: float) -> None:
        """``histogram.observe(value)`` (a labelled Histogram child), at the end of this tick."""
        observed = self._observed.get(histogram)
        if observed is None:
            self._observed[histogram] = [value]
        else:
            observed.append(value)
        self._queue()

    def _queue(self) -> None:
        """Queue :meth:`flush` on the running loop, unless it is queued there already.

        A flush queued on a loop that closed before running it is queued again on the
        next one; with no running loop the updates are applied at once.
        """
        loop = asyncio._get_running_loop()
        if loop is self._queued_on and loop is not None:
            return
        if loop is None:
            self.flush()
            return
        self._queued_on = loop
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Apply everything gathered so far."""
        self._queued_on = None
        counts, self._counts = self._counts, {}
        observed, self._observed = self._observed, {}
        for counter, amount in counts.items():
            counter.inc(amount)
        for histogram, values in observed.items():
            observe_all(histogram, values)
