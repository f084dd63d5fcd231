"""The idle learners of one process, looked after together: one store call per pass.

A learner that has read its log to the end parks here instead of polling the store on
its own (with thousands of models, a read and a lease renewal per model every few
milliseconds is more work than the event loop can do).  A pass renews the leases of
the parked learners and finds those with work (log entries after the offset they
applied, or a checkpoint request) in one store call per chunk of learners
(:meth:`Store.scan_idle`, a chunk sized to take about one loop slice:
:func:`chunk_size`; requests run between two), and wakes those, and those whose
lease was lost.  Work this process gives a learner (an append, a checkpoint request) wakes it at once; the passes
are for the work of other processes.  A pass runs every 10 ms, or less often when it
takes long (:func:`~service.domain.runtime.tasks.pause_after_pass`), but at least every third
of the lease's length, so that every lease is renewed in time.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass

from service.domain.runtime.tasks import LOOP_SLICE_SECONDS, LoopShare, pause_after_pass, stop_tasks
from service.store import IdleLearner, LeaseStore, StoreUnavailable

log = logging.getLogger("banditree.service")

_PASS_SECONDS = 0.01  # between two passes, with few models
_CHUNK = 128  # most learners per store call; requests run between two calls
_MIN_CHUNK = 16  # fewest learners per store call
_RETRY_SECONDS = 0.5  # wait after a pass found the store unreachable
_STARTS = 8  # learners restoring their model at once (each makes several store calls)
_NAMES_PER_TURN = 512  # parked learners a pass orders between two turns of the loop


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


class IdleLearners:
    """Renews the leases of idle learners and wakes each one when it has work."""

    def __init__(self, store: LeaseStore, *, holder: str, lease_seconds: float) -> None:
        self.store, self.holder, self.lease_seconds = store, holder, lease_seconds
        self._parked: dict[str, _Parked] = {}
        self._any = asyncio.Event()  # something is parked
        self._task: asyncio.Task[None] | None = None
        #: held by a learner while it restores its model and starts leading
        self.starting = asyncio.Semaphore(_STARTS)
        self._chunk = _CHUNK  # learners in the next store call (:func:`chunk_size`)

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
        parked = _Parked(wake, token, offset, renewed)
        self._parked[name] = parked
        self._any.set()
        try:
            await wake.wait()
        finally:
            self._parked.pop(name, None)
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
                await self._pass(started)
            except StoreUnavailable as err:  # leases not renewed lapse: the learner sees it
                log.warning("idle learners: %s", err)
                await asyncio.sleep(_RETRY_SECONDS)
                continue
            except Exception:  # the passes must outlive any one failure
                log.exception("idle learners: a pass failed; going on")
                await asyncio.sleep(_RETRY_SECONDS)
                continue
            took = time.monotonic() - started
            if took > self.lease_seconds / 3:
                log.warning("idle learners: a pass over %d took %.2f s", len(self._parked), took)
            wait = pause_after_pass(took, _PASS_SECONDS)
            await asyncio.sleep(max(0.0, min(wait, self.lease_seconds / 3 - took)))

    async def _oldest_first(self, share: LoopShare) -> list[str]:
        """The parked learners, the leases renewed longest ago first: a learner parked
        during a long pass (its lease taken a second or more before) is renewed at the
        start of the next one.  The renewal times are read :data:`_NAMES_PER_TURN` at a
        time, with a turn of the loop between (with 10,000 learners, reading them all
        for one sort held the loop 8-9 ms of CPU), and sorted as one list of floats."""
        names, renewed = list(self._parked), dict[str, float]()
        for start in range(0, len(names), _NAMES_PER_TURN):
            await share.turn()
            parked = self._parked
            chunk = names[start : start + _NAMES_PER_TURN]
            renewed.update([(name, parked[name].renewed) for name in chunk if name in parked])
        return sorted(renewed, key=renewed.__getitem__)

    async def _pass(self, started: float) -> None:
        share = LoopShare()
        names = await self._oldest_first(share)
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
