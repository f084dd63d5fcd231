"""Replicas: every serving process swaps in each new snapshot (checkpoint) of its models.

A :class:`ServedSnapshot` is the learner one process serves for one model, with the
checkpoint it came from.  The process's :class:`SnapshotWatcher` listens for the
store's notifications and, as a fallback, checks every model's newest checkpoint every
``snapshot_poll_seconds``; a newer checkpoint is loaded (in a worker thread) and
replaces the served learner whole.  Each swap observes the staleness of the snapshot:
the time since the oldest feedback it newly includes was acknowledged
(``banditree_model_staleness_seconds``).

A model's initial checkpoint (offset 0, published once when a learner first leads it)
replaces the learner the process built when it created or restored the model: right
after thousands of creates, thousands of swaps in a few seconds.  Each swap frees about
as many tracked objects as it makes, so the collector's count of new objects does not
rise and the new learners piled up in the youngest generation until one collection
walked them all on the event loop (the figures:
``docs/decisions/0007-event-loop-garbage.md``).  ``on_initial``
(the registry's :class:`service.domain.runtime.heap.HeapFreezer`) is told of each such swap,
so those learners leave the collector's walks with the model's other objects.  Later
swaps are not frozen: a replaced frozen learner's reference cycles would be kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from banditree.learners import Learner
from banditree.persistence import CorruptCheckpoint, loads
from service.domain.runtime.tasks import LoopShare, pause_after_pass, stop_tasks
from service.store import CheckpointInfo, Store, StoreUnavailable
from service.telemetry.metrics import ModelMetrics

log = logging.getLogger("banditree.service")


class SnapshotOwner(Protocol):
    """What a snapshot reads of the model it serves (:class:`service.domain.runtime.ModelRuntime`)."""

    name: str
    store: Store
    metrics: ModelMetrics

    @property
    def served(self) -> ServedSnapshot: ...


class ServedSnapshot:
    """The learner a process serves for one model, replaced whole by :meth:`refresh`."""

    def __init__(
        self,
        runtime: SnapshotOwner,
        learner: Learner,
        info: CheckpointInfo | None,
        on_initial: Callable[[], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.on_initial = on_initial  # an initial checkpoint was swapped in (see the module)
        self.learner = learner
        self.sequence = info.sequence if info else 0
        self.offset = info.offset if info else 0
        self.token = info.token if info else 0
        self.published_at = info.created_at if info else 0.0
        self._lock = asyncio.Lock()
        self._skipped: set[int] = set()  # corrupt checkpoints, reported once
        self._publish_gauges()

    def _publish_gauges(self) -> None:
        m = self.runtime.metrics
        m.version.set(self.learner.version)
        m.served_offset.set(self.offset)

    async def refresh(self) -> bool:
        """Swap in the newest valid checkpoint when it is newer than the served one."""
        runtime = self.runtime
        async with self._lock:
            stored = await runtime.store.list_checkpoints(runtime.name, limit=1)
            if stored and stored[0].sequence > self.sequence:
                stored = await runtime.store.list_checkpoints(runtime.name)  # may need older
            for info in stored:
                if info.sequence <= self.sequence:
                    return False
                if info.sequence in self._skipped:
                    continue
                blob = await runtime.store.load_checkpoint(runtime.name, info.sequence)
                try:
                    learner = await asyncio.to_thread(loads, blob or b"")
                    if learner.config() != self.learner.config():
                        raise CorruptCheckpoint("its config differs from the model record")
                except CorruptCheckpoint as err:
                    self._skipped.add(info.sequence)
                    log.error(
                        "model %s: checkpoint %d skipped: %s", runtime.name, info.sequence, err
                    )
                    continue
                self._swap(learner, info)
                return True
            return False

    def _swap(self, learner: Learner, info: CheckpointInfo) -> None:
        if info.offset > self.offset and info.acked_at > 0:
            self.runtime.metrics.staleness.observe(max(0.0, time.time() - info.acked_at))
        self.learner, self.sequence = learner, info.sequence
        self.offset, self.published_at = info.offset, info.created_at
        self.token = info.token
        self._publish_gauges()
        if info.offset == 0 and self.on_initial is not None:
            self.on_initial()

    async def find_version(self, version: int) -> tuple[bytes, CheckpointInfo] | None:
        """The bytes and info of the newest valid checkpoint of ``version``."""
        runtime = self.runtime
        for info in await runtime.store.list_checkpoints(runtime.name):
            if info.version != version:
                continue
            blob = await runtime.store.load_checkpoint(runtime.name, info.sequence)
            try:
                learner = await asyncio.to_thread(loads, blob or b"")
            except CorruptCheckpoint:
                runtime.metrics.checkpoint_corrupt.inc()
                continue
            if blob is not None and learner.config() == self.learner.config():
                return blob, info
        return None


class SnapshotWatcher:
    """Keeps every served model of a process on its newest snapshot."""

    def __init__(
        self, runtimes: Callable[[], Iterable[SnapshotOwner]], *, poll_seconds: float
    ) -> None:
        self.runtimes = runtimes
        self.poll_seconds = poll_seconds
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="snapshot-watcher")

    async def stop(self, seconds: float = 5.0) -> None:
        if self._task is not None:
            await stop_tasks([self._task], seconds)
            self._task = None

    async def _run(self) -> None:
        next_poll = time.monotonic()
        while True:
            runtimes = list(self.runtimes())
            if not runtimes:
                await asyncio.sleep(min(self.poll_seconds, 0.1))
                continue
            store = runtimes[0].store
            try:
                wait = max(0.0, next_poll - time.monotonic())
                names = await store.snapshot_notices(wait)
                started = time.monotonic()
                polling = started >= next_poll
                share = LoopShare()
                unreachable: StoreUnavailable | None = None
                for runtime in runtimes:
                    await share.turn()
                    if polling or runtime.name in names:
                        try:
                            await runtime.served.refresh()
                        except StoreUnavailable as err:  # a cluster node away: the models
                            unreachable = err  # of the others are refreshed all the same
                if unreachable is not None:
                    log.warning("snapshot watcher: %s", unreachable)
                if polling:  # thousands of models: the poll takes at most a twentieth of the time
                    took = time.monotonic() - started
                    next_poll = time.monotonic() + pause_after_pass(took, self.poll_seconds)
            except StoreUnavailable as err:
                log.warning("snapshot watcher: %s", err)
                await asyncio.sleep(min(self.poll_seconds, 0.5))
            except Exception:
                log.exception("snapshot watcher failed; going on")
                await asyncio.sleep(min(self.poll_seconds, 0.5))
