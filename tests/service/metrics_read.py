"""Reading the request counters of ``/metrics`` in a test.

A rendering slower than its budget (a loaded machine) is refreshed in the background,
at least a second apart, so one scrape right after a test's requests can show the
rendering from before them: read until a count arrives (10 s at most).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

READS, PAUSE_SECONDS = 100, 0.1


def ok_requests(metrics: str, route: str) -> float | None:
    """``banditree_http_requests_total`` of ``route``'s 200 answers, None if absent."""
    for line in metrics.splitlines():
        if (
            line.startswith("banditree_http_requests_total")
            and f'route="{route}"' in line
            and 'status="200"' in line
        ):
            return float(line.rsplit(" ", 1)[1])
    return None


async def ok_requests_reaching(
    scrape: Callable[[], Awaitable[str]], route: str, at_least: float
) -> float | None:
    """:func:`ok_requests` of the first scrape counting ``at_least``, else of the last."""
    counted = None
    for _ in range(READS):
        counted = ok_requests(await scrape(), route)
        if counted is not None and counted >= at_least:
            break
        await asyncio.sleep(PAUSE_SECONDS)
    return counted


def ok_requests_reaching_sync(
    scrape: Callable[[], str], route: str, at_least: float
) -> float | None:
    """:func:`ok_requests_reaching` with a blocking ``scrape``."""
    counted = None
    for _ in range(READS):
        counted = ok_requests(scrape(), route)
        if counted is not None and counted >= at_least:
            break
        time.sleep(PAUSE_SECONDS)
    return counted
