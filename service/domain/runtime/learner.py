"""The learner of one model: holds the lease, applies the log in order, publishes snapshots.

At most one process learns a model at a time.  A :class:`ModelLearner` runs in every
process with a learning role; each one tries to take the model's lease, and the one
that holds it restores the newest valid checkpoint, applies the log entries after its
offset and publishes a checkpoint (a snapshot) every ``checkpoint_every_updates``
updates or ``checkpoint_every_seconds``.  The others wait and take over when the lease
lapses.  The store refuses a checkpoint written with an outdated fencing token, so a
learner that was paused past its lease can never overwrite its successor's work.

With a :class:`~service.domain.runtime.share.LeaseShare`, a learner tries for the lease only
while its process leads fewer models than its fair share, and hands a lease back when
its process is over its share (another process joined).

The CPU work (``learner.learn``, serialising a checkpoint) runs in a worker thread, in
slices of at most ``_SLICE_SECONDS``: the event loop keeps answering requests and the
lease keeps being renewed.  A checkpoint is serialised between two slices and saved while
the next one learns (the save's outcome is taken before the next save, before the lease
is given back and before the learner idles; the log's next read waits for it, so that
it does not wait for the store's write lock on the event loop).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable
from typing import Any

from banditree.learners import Learner, build_learner
from banditree.persistence import CorruptCheckpoint, dumps, load_state
from service.domain.checkpoint_restore import newest_valid_checkpoint
from service.domain.runtime.api import Residency
from service.domain.runtime.idle import IdleLearners
from service.domain.runtime.learner_steps import (
    HandedOver,
    LearnerPolicy,
    LeaseLost,
    Pace,
    apply_slice,
    retry_seconds,
)
from service.domain.runtime.log_reader import LogReader
from service.domain.runtime.share import LeaseShare
from service.store import FencedOut, LogChunk, ModelGone, Store, StoreUnavailable
from service.telemetry.metrics import ModelMetrics

log = logging.getLogger("banditree.service")

_BATCH = 512  # log entries read per round trip
_REQUEST_CHECK_SECONDS = 0.1  # how often a busy learner looks for a checkpoint request


class ModelLearner:
    """Learns one model whenever this process holds its lease."""

    def __init__(
        self,
        *,
        name: str,
        uid: str,
        config: dict[str, Any],
        policy: LearnerPolicy,
        store: Store,
        metrics: ModelMetrics | Callable[[], ModelMetrics],
        holder: str,
        on_gone: Callable[[], None] | None = None,
        idle: IdleLearners,
        share: LeaseShare | None = None,
        on_led: Callable[[], None] | None = None,
        resident: Residency | None = None,
    ) -> None:
        self.name, self.uid, self.config = name, uid, config
        self.idle = idle  # where this learner waits when its log is read to the end
        self.policy, self.store, self.holder = policy, store, holder
        # bound on first use (a callable): an idle model has no series
        self._metrics_source = metrics
        self._metrics = None if callable(metrics) else metrics
        self.resident = resident  # models loaded in this process (a bound lets go of some)
        self._held = False  # hold_model called (a no-op unless stored by an older release)
        #: the model being learned while leading: None until its log has entries to learn
        #: (loaded then), and again once let go while idle (see :meth:`_let_go`)
        self._model: Learner | None = None
        self._idle = False  # waiting for work with everything learned published
        # checkpoint requests taken, and those a saved checkpoint answers: a request taken
        # and not answered (the lead failed meanwhile) makes the next lead publish once
        # caught up, its model loaded or not
        self._taken = self._answered = 0
        self.on_gone = on_gone  # the store no longer holds the model: deleted, or data lost
        self.share = share  # None: no limit on the models this process leads
        # called when this learner starts leading (its model's objects are made)
        self.on_led = on_led
        self._leaving = False  # handing the lease back (counted in share.leaving)
        self._reader: LogReader | None = None  # the log's reads while leading
        self._pace = Pace()  # the learning's last pace: the size of a slice's first chunk
        self.token: int | None = None
        self.offset = 0  # the last log entry applied while leading
        self._moved = asyncio.Event()  # set each time ``offset`` moves (see reached())
        self._wake = asyncio.Event()
        self._saving: asyncio.Task[None] | None = None  # a checkpoint's save under way
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def metrics(self) -> ModelMetrics:
        """The model's metric children (made on first use)."""
        if self._metrics is None:
            source = self._metrics_source
            self._metrics = source() if callable(source) else source
            self._metrics.lease_held.set(1 if self.token is not None else 0)
        return self._metrics

    def _lease_gauge(self, value: int) -> None:
        if self._metrics is not None:  # an idle model's series are not made for it
            self._metrics.lease_held.set(value)

    def _let_go(self) -> bool:
        """Drop the model's objects when idle (everything learned is in the newest
        checkpoint): True; False when busy.  Loaded again when its log has work."""
        if self._model is not None and not self._idle:
            return False
        self._model = None
        return True

    def start(self) -> None:
        # a context of its own: a learner started by a request has no store budget
        self._task = asyncio.create_task(
            self._run(), name=f"learner-{self.name}", context=contextvars.Context()
        )

    async def reached(self, offset: int) -> None:
        """Return once the entries up to ``offset`` are applied (woken as each batch is,
        rather than polled: a poll every few milliseconds takes the interpreter from
        the learner's thread as often)."""
        while self.offset < offset:
            self._moved.clear()
            await self._moved.wait()

    def _advance(self, offset: int) -> None:
        """The entries up to ``offset`` are applied: note it and wake :meth:`reached`."""
        self.offset = offset
        self._moved.set()

    def wake(self) -> None:
        """A new log entry was appended by this process: look at the log now."""
        self._wake.set()

    async def stop(self) -> None:
        """Publish what was learned, give the lease back and stop."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None

    # -- leading -----------------------------------------------------------------------
    async def _run(self) -> None:
        led = False  # this learner led until its last failure
        while not self._stopping:
            if self.share is not None and not self.share.take(self.name, self.wake):
                await self._sleep(self.policy.lease_seconds / 3)  # this process has its share
                continue
            pause = 0.0  # slept after the share's reservation is given back
            try:
                acquired = time.monotonic()
                # a few at a time (thousands may start at once), the lease taken inside:
                # it lapses 3 s after it is taken, not after a wait for the others
                async with self.idle.starting:
                    if not self._held:
                        await self.store.hold_model(self.name)
                        self._held = True
                    token = await self.store.acquire_lease(
                        self.name, self.holder, ttl_seconds=self.policy.lease_seconds,
                        now=time.time(),
                    )  # fmt: skip
                    self.token = token
                    started = None if token is None else await self._start(token)
                if token is None or started is None:
                    if led:  # e.g. its last call timed out, then another learner took over
                        log.warning("learner %s lost model %s to another", self.holder, self.name)
                        led = False
                    pause = self.policy.lease_seconds / 3
                else:
                    led = True
                    self._lease_gauge(1)
                    log.info("learner %s leads model %s (token %d)", self.holder, self.name, token)
                    await self._lead(token, *started, renewed=acquired)
            except HandedOver:
                log.info("learner %s handed model %s over", self.holder, self.name)
                led = False
                pause = self.policy.lease_seconds  # for another process to take
            except LeaseLost as err:
                log.warning("learner %s lost model %s: %s", self.holder, self.name, err)
                led = False
            except ModelGone as err:  # deleted, or lost with the store's data: wait for
                log.warning("learner of model %s: %s", self.name, err)  # the registry
                if self.on_gone is not None:
                    self.on_gone()
                pause = retry_seconds()
            except StoreUnavailable as err:
                log.error("learner of model %s: store unavailable: %s", self.name, err)
                pause = retry_seconds()
            except Exception:
                log.exception("learner of model %s failed; restarting it", self.name)
                pause = retry_seconds()
            finally:
                if self._reader is not None:
                    self._reader.close()
                    self._reader = None
                await self._drop_save()
                self.token = None
                self._lease_gauge(0)
                self._model = None
                if self.resident is not None:
                    self.resident.dropped(self.name)
                if self.share is not None:
                    self.share.give_back(leaving=self._leaving)
                self._leaving = False
            if pause:
                await self._sleep(pause)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        if self._stopping:  # stop() set the wake-up before this clear: do not sleep it away
            return
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass

    async def _restore(self) -> tuple[Learner, int]:
        stored = await self.store.list_checkpoints(self.name)
        found = await newest_valid_checkpoint(
            self.store, self.name, stored, expected_config=self.config,
            corrupt_total=self.metrics.checkpoint_corrupt,
        )  # fmt: skip
        if found is None:
            return await asyncio.to_thread(build_learner, self.config), 0
        learner, info = found
        return learner, info.offset

    async def _whole_offset(self) -> int | None:
        """The offset of the newest checkpoint when it holds the whole log and is sound
        (its checksum and config checked, the model not built): else None."""
        newest = await self.store.list_checkpoints(self.name, limit=1)
        if not newest or (await self.store.log_bounds(self.name)).last > newest[0].offset:
            return None
        blob = await self.store.load_checkpoint(self.name, newest[0].sequence)
        try:
            _, meta = load_state(blob or b"")
        except CorruptCheckpoint:
            return None  # the restore skips it, logged and counted
        return newest[0].offset if meta.get("config") == self.config else None

    async def _start_offset(self, restored: int) -> int:
        """Where learning goes on: after the restored checkpoint, or after a gap in the log.

        Entries between the checkpoint and the first one held are gone only when the store
        lost them (or the newest valid checkpoint is older than the trimmed log): they
        cannot be learned, so learning goes on after them instead of failing forever.
        """
        bounds = await self.store.log_bounds(self.name)
        start = bounds.first - 1 if bounds.length else bounds.last
        if start > restored:
            log.error(
                "model %s: log entries %d-%d are gone; learning goes on after them",
                self.name, restored + 1, start,
            )  # fmt: skip
            return start
        return restored

    async def _start(self, token: int) -> tuple[Learner | None, int, int, bool]:
        """Restore the model: the learner, the offset restored, the offset to go on from,
        and whether it is a new model whose initial checkpoint was just published.

        When the log holds nothing after the newest checkpoint, nothing is loaded (the
        learner is None): the model is loaded once its log has entries to learn.
        """
        whole = await self._whole_offset()
        if whole is not None:
            self._advance(whole)
            return None, whole, whole, False
        learner, restored = await self._restore()
        learner.prepare_to_learn()
        offset = await self._start_offset(restored)
        self._advance(offset)
        if offset == 0 and not await self.store.list_checkpoints(self.name, limit=1):
            # a new model: its first checkpoint is the initial one, at offset 0, so the
            # kept checkpoints (and the log after the oldest) always rebuild it
            await self._publish(learner, token, 0, 0.0)
            return learner, restored, offset, True
        return learner, restored, offset, False

    async def _lead(
        self,
        token: int,
        learner: Learner | None,
        restored: int,
        offset: int,
        published_initial: bool,
        *,
        renewed: float,
    ) -> None:
        """Learn the log from ``offset`` under the lease ``token`` (taken at ``renewed``).

        ``learner`` None: nothing to learn after the newest checkpoint, which is loaded
        when the log has entries or a checkpoint is asked for (:meth:`_load`).
        """
        published_offset, oldest_unpublished = restored, 0.0
        updates = 0
        last_publish = request_checked = time.monotonic()
        # publish once caught up: a request taken by a fenced-out predecessor is answered
        # (the initial checkpoint of a new model, just published, already answers it; an
        # unloaded model publishes only when asked, or its log has work)
        owed = self._taken > self._answered
        caught_up_publish = (not published_initial and learner is not None) or owed
        self._model = learner
        if learner is not None:
            self._loaded()
        self._reader = reader = LogReader(self._read, _BATCH)
        while True:
            entries = LogChunk.empty() if self._stopping else await reader.next(offset)
            if entries and self._model is None:
                restored, start = await self._load()
                if start != offset:  # the newest checkpoint did not restore: an older one
                    published_offset, offset = restored, start
                    self._advance(start)
                    continue
            if entries:
                model = self._model
                assert model is not None
                reader.read_ahead(entries)  # read while this batch is learned
                if not oldest_unpublished:
                    oldest_unpublished = entries.acked_at[0]
                done, changed = await asyncio.to_thread(self._apply, model, entries)
                offset, updates = entries.offsets[done - 1], updates + changed
                self._advance(offset)
                if self.resident is not None:
                    self.resident.used(self.name)
                if self.share is not None and self.share.applied is not None:
                    self.share.applied.inc(done)
            asked = False
            if not entries or time.monotonic() - request_checked >= _REQUEST_CHECK_SECONDS:
                asked = await self.store.take_checkpoint_request(self.name)
                request_checked = time.monotonic()
                self._taken += asked
            if caught_up_publish and not entries:
                asked, caught_up_publish = True, False
            if asked and self._model is None:  # loaded to answer the request
                restored, start = await self._load()
                if start != offset:
                    published_offset, offset = restored, start
                    self._advance(start)
                    caught_up_publish = True  # answered once caught up
                    continue
            dirty = offset != published_offset
            due = updates >= self.policy.every_updates or (
                time.monotonic() - last_publish >= self.policy.every_seconds
            )
            leaving = self._should_leave()
            if self._model is not None and (
                asked or (dirty and (due or self._stopping or leaving))
            ):
                # the store refuses this write if the lease was taken over meanwhile
                await self._publish(self._model, token, offset, oldest_unpublished, wait=False)
                published_offset, oldest_unpublished, updates = offset, 0.0, 0
                last_publish = time.monotonic()
            if self._stopping or leaving:
                await self._saved()
                await self.store.release_lease(self.name, self.holder, token)
                if leaving:
                    raise HandedOver()
                return
            renewed = await self._renew(token, renewed)
            if entries or asked:
                continue
            await self._saved()  # idle only once the checkpoint is in the store
            if offset != published_offset:  # learned, not yet published: until it is due
                publish_at = last_publish + self.policy.every_seconds
                renew_at = renewed + self.policy.lease_seconds / 3
                await self._sleep(max(0.0, min(publish_at, renew_at) - time.monotonic()))
            else:
                self._idle = True  # everything learned is published: it may be let go
                try:
                    renewed = await self._wait_for_work(token, offset, renewed)
                finally:
                    self._idle = False

    async def _load(self) -> tuple[int, int]:
        """Load the model (its newest valid checkpoint) to learn: the offset restored and
        the offset to go on from (after a gap in the log, see :meth:`_start_offset`)."""
        learner, restored = await self._restore()
        start = await self._start_offset(restored)
        self._model = learner
        self._loaded()
        return restored, start

    def _loaded(self) -> None:
        """The model's objects were made: out of the collector's walks, counted resident."""
        if self.on_led is not None:
            self.on_led()
        if self.resident is not None:
            self.resident.loaded(self.name, self._let_go)

    def _should_leave(self) -> bool:
        """Whether to hand the lease over (this process is over its share): asked once."""
        if not self._leaving and self.share is not None and self.share.should_leave():
            self._leaving = True
        return self._leaving

    async def _wait_for_work(self, token: int, offset: int, renewed: float) -> float:
        """Wait, idle, until woken (the lease renewed meanwhile): when it was renewed last."""
        self._wake.clear()
        if self._stopping:  # stop() set the wake-up before this clear: do not wait it away
            return renewed
        renewed, lost = await self.idle.wait(
            self.name, self._wake, token=token, offset=offset, renewed=renewed
        )
        if lost:
            raise LeaseLost("the lease lapsed or was revoked")
        return renewed

    async def _renew(self, token: int, renewed: float) -> float:
        """Renew the lease when a third of it has passed: when it was renewed last."""
        now = time.monotonic()
        if now - renewed < self.policy.lease_seconds / 3:
            return renewed
        if not await self.store.renew_lease(
            self.name, self.holder, token, ttl_seconds=self.policy.lease_seconds, now=time.time()
        ):
            raise LeaseLost("the lease lapsed or was revoked")
        return now

    async def _read(self, offset: int) -> LogChunk:
        if self._saving is not None:  # its outcome is the lead's to take
            await asyncio.wait([self._saving])
        entries = await self.store.read_log_chunk(self.name, after=offset, limit=_BATCH)
        if entries and entries.offsets[0] != offset + 1:
            # entries up to entries[0].offset - 1 were trimmed: only a checkpoint holding
            # them allows that, and we hold the lease, so our state is outdated
            raise LeaseLost(f"log entries after offset {offset} are gone (another learner ran)")
        return entries

    def _apply(self, learner: Learner, entries: LogChunk) -> tuple[int, int]:
        """Learn from ``entries`` in order for at most one slice: ``(entries done, updates)``."""
        return apply_slice(
            learner, entries, uid=self.uid, default_loss=self.policy.default_loss,
            metrics=self.metrics, pace=self._pace,
        )  # fmt: skip

    async def _publish(
        self, learner: Learner, token: int, offset: int, acked_at: float, *, wait: bool = True
    ) -> None:
        """Serialise ``learner`` and save it; with ``wait`` False the save goes on while
        the lead does (:meth:`_saved` takes its outcome), after the previous one's."""
        await self._saved()
        started = time.perf_counter()
        blob = await asyncio.to_thread(dumps, learner)
        save = self._save(learner.version, blob, token, offset, acked_at, started, self._taken)
        if wait:
            await save
        else:
            self._saving = asyncio.ensure_future(save)
            await asyncio.sleep(0)  # the save under way before the next slice takes the thread

    async def _saved(self) -> None:
        """The outcome of the save under way, if any (LeaseLost, StoreUnavailable...)."""
        saving, self._saving = self._saving, None
        if saving is not None:
            await saving

    async def _drop_save(self) -> None:
        """Wait for a save under way whose outcome no one takes (the lead failed)."""
        saving, self._saving = self._saving, None
        if saving is not None:
            await asyncio.wait([saving])
            if not saving.cancelled():
                saving.exception()  # retrieved: counted by _save, the lead failed anyway

    async def _save(
        self,
        version: int,
        blob: bytes,
        token: int,
        offset: int,
        acked_at: float,
        started: float,
        taken: int = 0,
    ) -> None:
        """Save a checkpoint; ``taken``: the checkpoint requests taken before it."""
        try:
            info = await self.store.save_checkpoint(
                self.name, version=version, blob=blob, keep=self.policy.keep,
                now=time.time(), offset=offset, acked_at=acked_at, token=token,
            )  # fmt: skip
        except FencedOut as err:
            self.metrics.checkpoint_failures.inc()
            raise LeaseLost(str(err)) from None
        except StoreUnavailable:
            self.metrics.checkpoint_failures.inc()
            raise
        self._answered = max(self._answered, taken)  # the requests taken before it
        self.metrics.checkpoint_duration.observe(time.perf_counter() - started)
        log.debug("model %s: checkpoint %d at offset %d", self.name, info.sequence, offset)
