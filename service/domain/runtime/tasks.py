"""Stopping background tasks within a deadline; pacing passes over every model.

On Python 3.11 ``asyncio.wait_for`` (used inside redis-py for every socket write) drops
a cancellation that arrives in the loop iteration where the wrapped write completes
(CPython gh-86296, fixed in 3.12).  A task cancelled once at that moment goes on, and a
``while True`` loop that was told to stop by one ``cancel()`` then runs forever: the
process never finishes its shutdown.  :func:`stop_tasks` cancels again until the tasks
are done, and gives up (logging where each one is) at a deadline.
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Iterable

log = logging.getLogger("banditree.service")

#: how often a task that went on after a cancel is cancelled again
_RECANCEL_SECONDS = 0.1
#: the longest a pass over every model holds the event loop before requests get a turn
LOOP_SLICE_SECONDS = 0.002


class LoopShare:
    """Gives the event loop back during a long pass: one :meth:`turn` per model.

    A pass over thousands of models awaits store calls that often complete without
    suspending (the embedded store answers on the calling thread, a Redis reply may be
    buffered already), so it would hold the loop for the whole pass.  :meth:`turn`
    yields once the pass has run ``slice_seconds`` since it last did, so a request
    waits at most about that long for each step it takes on the loop.
    """

    def __init__(self, slice_seconds: float = LOOP_SLICE_SECONDS) -> None:
        self.slice_seconds = slice_seconds
        self._since = time.perf_counter()

    async def turn(self) -> None:
        """Let other tasks run if this pass has held the loop for a slice."""
        if time.perf_counter() - self._since >= self.slice_seconds:
            await asyncio.sleep(0)
            self._since = time.perf_counter()


def pause_after_pass(pass_seconds: float, interval_seconds: float, *, share: float = 0.05) -> float:
    """The wait before a periodic pass over every model runs again.

    Its interval, or longer when the last pass took long: a pass whose cost grows with
    the number of models (the maintenance sweep, the snapshot poll, discovery, the idle
    learners' scan) then takes at most ``share`` of the time (the default: nineteen
    times its length for a twentieth), and requests keep the rest of the event loop.
    With thousands of models such passes run less often than their interval.
    """
    return max(interval_seconds, pass_seconds * (1 - share) / share)


async def stop_tasks(tasks: Iterable[asyncio.Task[None]], seconds: float) -> bool:
    """Cancel ``tasks`` (again if one goes on) and wait; False when some outlive ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    pending = {task for task in tasks if not task.done()}
    while pending:
        left = deadline - loop.time()
        if left <= 0:
            for task in pending:
                stack = io.StringIO()
                task.print_stack(file=stack)
                log.error(
                    "task %s did not stop in %.1f s:\n%s",
                    task.get_name(),
                    seconds,
                    stack.getvalue(),
                )
            return False
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=min(left, _RECANCEL_SECONDS))
    return True
