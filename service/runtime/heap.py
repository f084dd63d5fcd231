"""Long-lived objects of new models out of the garbage collector's walks, in bulk.

A model holds hundreds of long-lived objects (its runtime and metric series when it is
created; its learner, optimiser and detectors when the learner starts leading it, a
moment later).  Left where the collector finds them, every collection of the old
generation walks all of them: with 10,000 models made after start-up, several hundred
thousand objects and a stall of the event loop of 100 ms or more.  :class:`HeapFreezer`
moves them out of its reach with :func:`gc.freeze` (constant time) once things settle:
at most once per :data:`FREEZE_DELAY_SECONDS`, however many models are created at once,
and after a collection of the young generations, so that their garbage is collected
rather than frozen.  What a freeze costs: reference cycles among the objects of a model
deleted later are kept (a deleted model's objects without cycles are freed as usual).
"""

from __future__ import annotations

import asyncio
import gc

#: a freeze waits this long after the first request, so one freeze covers a burst
FREEZE_DELAY_SECONDS = 0.5


class HeapFreezer:
    """Freezes the heap (see the module) soon after :meth:`soon` is called, once per burst."""

    def __init__(self, *, delay_seconds: float = FREEZE_DELAY_SECONDS) -> None:
        self.delay_seconds = delay_seconds
        self.freezes = 0  # how many freezes ran (for tests and diagnosis)
        self._pending: asyncio.TimerHandle | None = None

    def soon(self) -> None:
        """Long-lived objects were made: freeze them in ``delay_seconds`` (one freeze for
        every call until then).  Called on the event loop."""
        if self._pending is None:
            self._pending = asyncio.get_running_loop().call_later(self.delay_seconds, self._freeze)

    def _freeze(self) -> None:
        self._pending = None
        gc.collect(1)  # the young generations' garbage is freed, not frozen
        gc.freeze()
        self.freezes += 1

    def cancel(self) -> None:
        """Drop a pending freeze (the service stops)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
