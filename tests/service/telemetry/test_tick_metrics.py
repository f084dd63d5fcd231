"""Metrics gathered per event-loop tick end with the totals of one update per request."""

from __future__ import annotations

import asyncio
import math

from prometheus_client import CollectorRegistry, Counter, Histogram

from service.telemetry.metrics import LATENCY_BUCKETS_SECONDS
from service.telemetry.tick_metrics import TickMetrics, observe_all, observe_counted

VALUES = [0.0, 1e-5, 0.0004, 0.0004, 0.003, 0.07, 0.25, 2.0, 99.0, 1e9, -1.0, math.nan]


def _pair() -> tuple[CollectorRegistry, Histogram, Counter]:
    registry = CollectorRegistry()
    histogram = Histogram("h", "h", ["m"], registry=registry, buckets=LATENCY_BUCKETS_SECONDS)
    counter = Counter("c", "c", ["m"], registry=registry)
    return registry, histogram, counter


def _samples(registry: CollectorRegistry) -> list[tuple[str, str, str]]:
    """Every sample but the creation times, NaN written out (NaN != NaN)."""
    return [
        (s.name, repr(sorted(s.labels.items())), repr(s.value))
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    ]


def test_a_batch_of_observations_ends_as_one_observe_each() -> None:
    one_each, histogram, _ = _pair()
    for value in VALUES:
        histogram.labels("a").observe(value)
    batched, histogram, _ = _pair()
    observe_all(histogram.labels("a"), VALUES)
    assert _samples(batched) == _samples(one_each)
    observe_all(histogram.labels("a"), [math.inf])  # only the +Inf bucket has room
    # cumulative: every value but NaN, and the infinity
    assert batched.get_sample_value("h_bucket", {"m": "a", "le": "+Inf"}) == len(VALUES)
    assert batched.get_sample_value("h_bucket", {"m": "a", "le": "2.5"}) == len(VALUES) - 3


def test_counted_observations_end_as_the_values_repeated() -> None:
    """A learner's chunk observed once at its mean time per feedback: each value with
    its count gives the samples of as many observations of it (the sums exact here)."""
    counted = [(0.25, 3), (0.0004, 1), (2.0, 2), (99.0, 0), (1e9, 1), (math.nan, 2)]
    one_each, histogram, _ = _pair()
    for value, count in counted:
        for _ in range(count):
            histogram.labels("a").observe(value)
    batched, histogram, _ = _pair()
    observe_counted(histogram.labels("a"), counted)
    assert _samples(batched) == _samples(one_each)
    assert batched.get_sample_value("h_count", {"m": "a"}) == 7  # NaN falls in no bucket


def test_updates_apply_at_the_end_of_the_tick_and_on_the_next_loop() -> None:
    registry, histogram, counter = _pair()
    tick = TickMetrics()

    def count() -> float | None:
        return registry.get_sample_value("c_total", {"m": "a"})

    async def requests(n: int) -> float | None:
        for _ in range(n):
            tick.inc(counter.labels("a"))
            tick.observe(histogram.labels("a"), 0.001)
        seen_in_tick = count()
        await asyncio.sleep(0)  # the tick ends
        now = count()
        assert seen_in_tick is not None and now is not None and now >= seen_in_tick + n
        return seen_in_tick

    assert asyncio.run(requests(3)) == 0.0
    loop = asyncio.new_event_loop()  # a loop that stops and closes with the flush queued
    loop.call_soon(lambda: (tick.inc(counter.labels("a"), 5), loop.stop()))
    loop.run_forever()
    loop.close()
    assert count() == 3.0  # queued on the closed loop, not applied yet
    asyncio.run(requests(2))  # the next loop applies it with its own
    assert count() == 10.0
    assert registry.get_sample_value("h_count", {"m": "a"}) == 5.0
    tick.inc(counter.labels("a"))  # no running loop: at once
    assert count() == 11.0


def test_an_increment_and_an_observation_together_end_as_each_alone() -> None:
    """``inc_observe`` (one request's counter and latency at once) leaves the samples of
    one ``inc`` and one ``observe`` per request, once the tick ends."""
    one_each, histogram, counter = _pair()
    for value in VALUES:
        counter.labels("a").inc(2.0)
        histogram.labels("a").observe(value)
    together, histogram, counter = _pair()
    tick = TickMetrics()

    async def requests() -> None:
        for value in VALUES:
            tick.inc_observe(counter.labels("a"), 2.0, histogram.labels("a"), value)
        assert together.get_sample_value("c_total", {"m": "a"}) == 0.0  # not in this tick
        await asyncio.sleep(0)

    asyncio.run(requests())
    assert _samples(together) == _samples(one_each)
