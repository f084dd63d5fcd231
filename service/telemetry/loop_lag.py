"""The event loop's lag: how late a timer of the loop fires, as a histogram.

A task sleeps :data:`INTERVAL_SECONDS` at a time and observes how much later than due
it woke (``banditree_event_loop_lag_seconds``).  A request waiting on the loop waits
as long: a callback that holds the loop (a slow store write, a large JSON, a garbage
collection) or another thread holding the GIL (the learner, a checkpoint being
serialised) shows up here, and its p99 bounds what it adds to a request's p99.
"""

from __future__ import annotations

import asyncio
from typing import Any

INTERVAL_SECONDS = 0.025  # a wake-up every 25 ms: 40 observations a second, negligible


async def watch_loop_lag(histogram: Any, interval: float = INTERVAL_SECONDS) -> None:
    """Observe the lag of each wake-up into ``histogram`` until cancelled."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + interval
        await asyncio.sleep(interval)
        histogram.observe(max(0.0, loop.time() - due))
