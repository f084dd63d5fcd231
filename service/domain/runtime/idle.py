"""The idle learners of one process, looked after together: one store call per pass.

A learner that has read its log to the end parks here instead of polling the store on
its own (with thousands of models, a read and a lease renewal per model every few
milliseconds is more work than the event loop can do).  A pass renews the leases of
parked learners and finds those with work (log entries after the offset they applied,
or a checkpoint request) in one store call per chunk of learners
(:meth:`Store.scan_idle`, a chunk sized to take about one loop slice:
:func:`chunk_size`; requests run between two), and wakes those, and those whose
lease was lost.  Work this process gives a learner (an append, a checkpoint request)
wakes it at once; the passes are for the work of other processes.

A pass looks at the *hot* learners (parked less than :data:`COLD_AFTER_SECONDS` ago:
the models in use) every time, and at a slice of the *cold* ones, in turn, so that
each cold learner is looked at about every :data:`_COLD_SHARE` of a third of the lease
(any left past a third is taken whatever the slice): a pass is as long as the active
models and that slice, not as the fleet (a pass over 9,500 idle learners took 1.75 s,
over a third of a 3 s lease).  A pass runs every :data:`_PASS_SECONDS`, or less often
when it takes long (:func:`~service.domain.runtime.tasks.pause_after_pass`), but at
least :data:`_PASSES_PER_PERIOD` times per cold period, so that the slices stay small.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from service.domain.runtime.tasks import LOOP_SLICE_SECONDS, LoopShare, pause_after_pass, stop_tasks
from service.store import IdleLearner, LeaseStore, StoreUnavailable

log = logging.getLogger("banditree.service")

_PASS_SECONDS = 0.01  # between two passes, with few models
_CHUNK = 128  # most learners per store call; requests run between two calls
_MIN_CHUNK = 16  # fewest learners per store call
_RETRY_SECONDS = 0.5  # wait after a pass found the store unreachable
_STARTS = 8  # learners restoring their model at once (each makes several store calls)
_NAMES_PER_TURN = 512  # parked learners a pass picks between two turns of the loop
#: a learner parked this long is cold: looked at in turn, not at every pass
COLD_AFTER_SECONDS = 5.0
#: each cold learner is looked at about every this share of a third of the lease
_COLD_SHARE = 0.9
#: passes at least this many times per cold period (each takes a slice of the cold ones)
_PASSES_PER_PERIOD = 8


def chunk_size(seconds: float, learners: int) -> int:
    """Learners in the next store call of a pass, from the last call's ``seconds`` for
    ``learners``: about one loop slice's worth (:data:`LOOP_SLICE_SECONDS`), between
    :data:`_MIN_CHUNK` and :data:`_CHUNK`.

    The embedded store answers on the event loop's thread, so a call over many learners
    holds every request for its whole length; sized to a slice, a request waits about a
    slice per call it queues behind, whatever the machine's speed or load.
    """
    if seconds <= 0.0:
        return _CHUNK
    return max(_MIN_CHUNK, min(_CHUNK, int(LOOP_SLICE_SECONDS * learners / seconds)))


@dataclass
class _Parked:
    wake: asyncio.Event
    token: int
    offset: int
    renewed: float  # time.monotonic() when the lease was renewed last
    lost: bool = False
    since: float = 0.0  # time.monotonic() when it parked


class IdleLearners:
    """Renews the leases of idle learners and wakes each one when it has work."""

    def __init__(
        self,
        store: LeaseStore,
        *,
        holder: str,
        lease_seconds: float,
        on_pass: Callable[[float, int], None] | None = None,
    ) -> None:
        self.store, self.holder, self.lease_seconds = store, holder, lease_seconds
        self.on_pass = on_pass  # (seconds, learners looked at) after each pass
        self._parked: dict[str, _Parked] = {}
        self._any = asyncio.Event()  # something is parked
        self._task: asyncio.Task[None] | None = None
        #: held by a learner while it restores its model and starts leading
        self.starting = asyncio.Semaphore(_STARTS)
        self._chunk = _CHUNK  # learners in the next store call (:func:`chunk_size`)
        #: parked less than COLD_AFTER_SECONDS ago, in the order they parked
        self._hot: dict[str, None] = {}
        #: the cold ones, looked at longest ago first
        self._cold: OrderedDict[str, None] = OrderedDict()
        self._last_pass: float | None = None  # when the last pass began (monotonic)

    async def wait(
        self, name: str, wake: asyncio.Event, *, token: int, offset: int, renewed: float
    ) -> tuple[float, bool]:
        """Wait until ``wake`` is set (by this process, or by a pass that found work).

        ``token`` is the learner's lease, renewed at ``renewed`` (monotonic); ``offset``
        the last log entry it applied.  Returns when the lease was renewed last and
        whether it was lost meanwhile.
        """
        if self._task is None:  # started by the first learner: in a context of its own
            self._task = asyncio.create_task(
                self._run(), name="idle-learners", context=contextvars.Context()
            )
        parked = _Parked(wake, token, offset, renewed, since=time.monotonic())
        self._parked[name] = parked
        self._cold.pop(name, None)
        self._hot.pop(name, None)
        self._hot[name] = None  # the newest parked
        self._any.set()
        try:
            await wake.wait()
        finally:
            if self._parked.get(name) is parked:
                del self._parked[name]
                self._hot.pop(name, None)
                self._cold.pop(name, None)
        return parked.renewed, parked.lost

    async def stop(self) -> None:
        """Stop the passes (the learners have stopped first)."""
        if self._task is not None:
            await stop_tasks([self._task], 5.0)
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._parked:
                self._any.clear()
                await self._any.wait()
                continue
            started = time.monotonic()
            try:
                looked = await self._pass(started)
            except StoreUnavailable as err:  # leases not renewed lapse: the learner sees it
                log.warning("idle learners: %s", err)
                await asyncio.sleep(_RETRY_SECONDS)
                continue
            except Exception:  # the passes must outlive any one failure
                log.exception("idle learners: a pass failed; going on")
                await asyncio.sleep(_RETRY_SECONDS)
                continue
            took = time.monotonic() - started
            if self.on_pass is not None:
                self.on_pass(took, looked)
            if took > self.lease_seconds / 3:
                log.warning(
                    "idle learners: a pass over %d of %d took %.2f s",
                    looked, len(self._parked), took,
                )  # fmt: skip
            wait = pause_after_pass(took, _PASS_SECONDS)
            await asyncio.sleep(max(0.0, min(wait, self._cold_period() / _PASSES_PER_PERIOD)))

    def _cold_period(self) -> float:
        """About how often each cold learner is looked at (seconds)."""
        return _COLD_SHARE * self.lease_seconds / 3

    async def _picked(self, started: float, share: LoopShare) -> list[str]:
        """The learners of the pass beginning at ``started``: every hot one, then the
        slice of cold ones that comes next (looked at longest ago first), and any cold
        one past a third of the lease since its renewal.

        The slice is the share of the cold ones that the time since the last pass is of
        the cold period, at least a store call's worth (so a few hundred parked
        learners are all looked at every pass, as before).  Learners are picked
        :data:`_NAMES_PER_TURN` at a time, with a turn of the loop between."""
        parked, hot, cold = self._parked, self._hot, self._cold
        cooled: list[str] = []
        for name in hot:  # in the order they parked: the ones that cooled come first
            if started - parked[name].since < COLD_AFTER_SECONDS:
                break
            cooled.append(name)
        for name in cooled:
            del hot[name]
            cold[name] = None  # looked at at every pass so far: at the back
        period = self._cold_period()
        elapsed = period if self._last_pass is None else started - self._last_pass
        self._last_pass = started
        # rounded first: the times of passes a whole step apart differ from the step by
        # a rounding error that grows with the clock's value (uptime), and a ceil of
        # 500.000000004 took one learner more each pass, out of turn
        slice_size = round(len(cold) * min(1.0, elapsed / period), 3)
        budget = max(_CHUNK, math.ceil(slice_size))
        due = started - self.lease_seconds / 3  # renewed before: taken whatever the slice
        picked, taken, total = list(hot), 0, len(cold)
        while taken < total:
            batch: list[str] = []
            for name in cold:  # from the front: looked at longest ago
                if len(batch) >= _NAMES_PER_TURN or taken + len(batch) >= total:
                    break
                if taken + len(batch) >= budget and parked[name].renewed > due:
                    break
                batch.append(name)
            for name in batch:
                cold.move_to_end(name)
            picked += batch
            taken += len(batch)
            if len(batch) < _NAMES_PER_TURN:
                break
            await share.turn()
        return picked

    async def _pass(self, started: float) -> int:
        """Look at the learners :meth:`_picked` for this pass: how many."""
        share = LoopShare()
        names = await self._picked(started, share)
        i, size = 0, self._chunk
        while i < len(names):
            await share.turn()
            chunk = [(name, self._parked.get(name)) for name in names[i : i + size]]
            i += size
            parked = {name: p for name, p in chunk if p is not None}
            idle = [IdleLearner(name, p.token, p.offset) for name, p in parked.items()]
            called = time.perf_counter()
            verdicts = await self.store.scan_idle(
                self.holder, idle, ttl_seconds=self.lease_seconds, now=time.time()
            )
            if idle:
                size = self._chunk = chunk_size(time.perf_counter() - called, len(idle))
            for name, verdict in verdicts.items():
                p = parked[name]
                if verdict == "idle":
                    p.renewed = started
                else:
                    p.lost = verdict == "lost"
                    p.wake.set()
        return len(names)
