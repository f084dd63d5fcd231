"""Long-lived objects of new models out of the garbage collector's walks, in bulk.

A model holds hundreds of long-lived objects (its runtime and metric series when it is
created; its learner, optimiser and detectors when the learner starts leading it, a
moment later).  Left where the collector finds them, every collection of the old
generation walks all of them, with the event loop held (the figures, against CPython's
defaults: ``docs/decisions/0007-event-loop-garbage.md``).  :class:`HeapFreezer`
moves them out of its reach with :func:`gc.freeze` (constant time) once things settle:
at most :data:`FREEZE_DELAY_SECONDS` after the first call of a burst, and at once after
every :data:`FREEZE_EVERY_CALLS` calls, always after a collection of the young
generations, so that their garbage is collected rather than frozen.  That collection
walks whatever the burst made so far, on the event loop, so the count bound keeps each
freeze's walk to :data:`FREEZE_EVERY_CALLS` models' objects.  What a
freeze costs: reference cycles among the objects of a model deleted later are kept (a
deleted model's objects without cycles are freed as usual).
"""

from __future__ import annotations

import asyncio
import gc

#: a freeze waits this long after the first request, so one freeze covers a burst
FREEZE_DELAY_SECONDS = 0.5
#: ... or runs at the loop's next turn after this many requests (a model's each)
FREEZE_EVERY_CALLS = 64


class HeapFreezer:
    """Freezes the heap (see the module) soon after :meth:`soon` is called, once per burst."""

    def __init__(
        self,
        *,
        delay_seconds: float = FREEZE_DELAY_SECONDS,
        every_calls: int = FREEZE_EVERY_CALLS,
        enabled: bool = True,
    ) -> None:
        self.delay_seconds, self.every_calls = delay_seconds, every_calls
        #: False: nothing is ever frozen (``BANDITREE_LIBRARY_PATHS=gc``, CPython's defaults)
        self.enabled = enabled
        self.freezes = 0  # how many freezes ran (for tests and diagnosis)
        self._pending: asyncio.Handle | None = None
        self._calls = 0  # since the last freeze

    def soon(self) -> None:
        """Long-lived objects were made: freeze them in ``delay_seconds`` (one freeze for
        every call until then), or at the loop's next turn once ``every_calls`` calls came
        since the last freeze.  Called on the event loop."""
        if not self.enabled:
            return
        self._calls += 1
        loop = asyncio.get_running_loop()
        if self._calls >= self.every_calls:
            self.cancel()
            self._pending = loop.call_soon(self._freeze)
        elif self._pending is None:
            self._pending = loop.call_later(self.delay_seconds, self._freeze)

    def _freeze(self) -> None:
        self._pending = None
        self._calls = 0
        gc.collect(1)  # the young generations' garbage is freed, not frozen
        gc.freeze()
        self.freezes += 1

    def cancel(self) -> None:
        """Drop a pending freeze (the service stops)."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
