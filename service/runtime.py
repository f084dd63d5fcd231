"""One served model: its learner, the single writer that applies feedback, its checkpoints.

Threading model: everything runs on the event loop.  Predictions call
``learner.act``, which reads the learner's immutable snapshot; the writer task takes
accepted feedback from a FIFO queue and calls ``learner.learn`` one item at a time,
yielding to the loop between items so predictions keep flowing.  Checkpoints and
rollbacks go through the same queue, so a checkpoint holds exactly the feedback
accepted before it was asked for.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from banditree.learners import Decision, Feedback, InvalidInput, Learner
from banditree.persistence import dumps
from service.checkpoint_restore import newest_valid_checkpoint
from service.errors import ServiceError
from service.metrics import ModelMetrics
from service.store import CheckpointInfo, EventLookup, Store

log = logging.getLogger("banditree.service")

#: store status (also the ``outcome`` label) -> HTTP status and message
_REFUSALS = {
    "unknown": (404, "is not a pending decision of this model"),
    "duplicate": (409, "has already received its feedback"),
    "expired": (410, "expired before its feedback arrived"),
}


@dataclass(frozen=True)
class Policy:
    """Resolved per-model service settings."""

    checkpoint_every_updates: int
    checkpoint_every_seconds: float
    event_ttl_seconds: float
    default_loss: float | None
    checkpoint_keep: int


@dataclass
class _Learn:
    decision: Decision
    feedback: Feedback


@dataclass
class _Call:
    run: Callable[[], Awaitable[Any]]
    done: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


_STOP = object()


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


#: numpy scalars (a leaf index, TEL extras) serialise as plain JSON numbers
_DUMPS_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


def pending_payload(uid: str, decision: Decision) -> str:
    """The stored form of a pending decision (compact JSON; read back by ``_decision``)."""
    data = {"uid": uid, "decision": vars(decision)}
    return orjson.dumps(data, default=_json_default, option=_DUMPS_OPTIONS).decode()


class ModelRuntime:
    """A learner served under ``name``, with its writer task and checkpoint policy."""

    def __init__(
        self,
        *,
        name: str,
        uid: str,
        learner: Learner,
        policy: Policy,
        store: Store,
        metrics: ModelMetrics,
        last_checkpoint: CheckpointInfo | None = None,
    ) -> None:
        self.name, self.uid, self.learner = name, uid, learner
        self.policy, self.store, self.metrics = policy, store, metrics
        self._last_checkpoint_time = last_checkpoint.created_at if last_checkpoint else time.time()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._dirty = False
        self._updates_since_checkpoint = 0
        self._leaves_sum, self._leaves_count = 0.0, 0
        metrics.version.set(learner.version)

    # -- life cycle ------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.create_task(self._write_loop(), name=f"writer-{self.name}")

    async def stop(self, *, checkpoint: bool) -> None:
        """Apply every accepted feedback, stop the writer, then checkpoint when changed."""
        if self._task is not None:
            self._queue.put_nowait(_STOP)
            await self._task
            self._task = None
        if checkpoint and self._dirty:
            try:
                await self._checkpoint_now()
            except ServiceError:
                log.error("final checkpoint of model %s failed", self.name)

    @property
    def pending_updates(self) -> int:
        return self._queue.qsize()

    async def _write_loop(self) -> None:
        while True:
            job = await self._queue.get()
            if job is _STOP:
                return
            if isinstance(job, _Learn):
                self._apply(job)
                if self._updates_since_checkpoint >= self.policy.checkpoint_every_updates:
                    try:
                        await self._checkpoint_now()
                    except ServiceError:
                        pass  # counted and logged; retried at the next trigger
                await asyncio.sleep(0)  # let predictions run between updates
            else:
                try:
                    job.done.set_result(await job.run())
                except Exception as err:  # handed to the caller that asked
                    job.done.set_exception(err)

    def _apply(self, job: _Learn) -> None:
        started = time.perf_counter()
        try:
            changed = self.learner.learn(job.decision, job.feedback)
        except InvalidInput as err:
            log.warning(
                "model %s dropped feedback of %s: %s", self.name, job.decision.event_id, err
            )
            return
        self.metrics.update_latency.observe(time.perf_counter() - started)
        self._dirty = True
        if changed:
            self._updates_since_checkpoint += 1
            self.metrics.updates.inc()
            self.metrics.version.set(self.learner.version)
        mean_loss = self.learner.counters.get("progressive_mean_loss", float("nan"))
        self.metrics.mean_loss.set(mean_loss)

    async def _through_writer(self, run: Callable[[], Awaitable[Any]]) -> Any:
        job = _Call(run)
        self._queue.put_nowait(job)
        return await job.done

    # -- predict ---------------------------------------------------------------------
    async def predict(self, contexts: list[list[float]]) -> list[Decision]:
        """Decide for every context and store the decisions as pending events."""
        started = time.perf_counter()
        decisions = [self.learner.act(c, event_id=secrets.token_hex(12)) for c in contexts]
        events = [(d.event_id, pending_payload(self.uid, d)) for d in decisions]
        try:
            await self.store.put_events(
                self.name, events, now=time.time(), ttl_seconds=self.policy.event_ttl_seconds
            )
        except Exception as err:
            log.error("model %s could not store decisions: %s", self.name, err)
            raise ServiceError(503, "the event store is unreachable; try again") from None
        m = self.metrics
        m.predictions.inc(len(decisions))
        explored = sum(d.explored for d in decisions)
        if explored:
            m.explored.inc(explored)
        leaves = [d.extras["reachable_leaves"] for d in decisions if "reachable_leaves" in d.extras]
        if leaves:
            self._leaves_sum += float(sum(leaves))
            self._leaves_count += len(leaves)
            m.reachable_leaves.set(self._leaves_sum / self._leaves_count)
        m.predict_latency.observe(time.perf_counter() - started)
        return decisions

    # -- feedback --------------------------------------------------------------------
    def _refuse(self, found: EventLookup, event_id: str) -> ServiceError:
        outcome = found.status if found.status in _REFUSALS else "unknown"
        status, text = _REFUSALS[outcome]
        self.metrics.feedback[outcome].inc()
        return ServiceError(status, f"event_id {event_id!r} {text}", "event_id")

    def _decision(self, payload: str | None) -> Decision | None:
        data = orjson.loads(payload or "{}")
        if data.get("uid") != self.uid:
            return None  # an event of a deleted model of the same name
        return Decision.from_dict(data["decision"])

    async def feedback(self, event_id: str, feedback: Feedback, *, field: str = "loss") -> None:
        """Check the feedback against its pending decision; on success apply it exactly once."""
        try:
            found = await self.store.peek_event(self.name, event_id, now=time.time())
        except Exception as err:
            log.error("model %s could not read event %s: %s", self.name, event_id, err)
            raise ServiceError(503, "the event store is unreachable; try again") from None
        if found.status != "pending":
            raise self._refuse(found, event_id)
        decision = self._decision(found.payload)
        if decision is None:
            raise self._refuse(EventLookup("unknown"), event_id)
        try:
            self.learner.check(decision, feedback)
        except InvalidInput as err:
            self.metrics.feedback["invalid"].inc()
            detail = str(err) if field == "loss" else f"{err} (computed from {field})"
            raise ServiceError(422, detail, err.field) from None
        claimed = await self.store.claim_event(self.name, event_id, now=time.time())
        if claimed.status != "claimed":
            raise self._refuse(claimed, event_id)
        self._queue.put_nowait(_Learn(decision, feedback))
        self.metrics.feedback["applied"].inc()

    def default_feedback(self, decision: Decision) -> Feedback | None:
        loss = self.policy.default_loss
        if loss is None:
            return None
        return Feedback(losses=(loss, loss)) if decision.probes is not None else Feedback(loss=loss)

    async def sweep(self, now: float) -> None:
        """Expire overdue decisions (applying the default loss), checkpoint on the timer."""
        for payload in await self.store.claim_expired(self.name, now=now, limit=1000):
            self.metrics.expired.inc()
            decision = self._decision(payload)
            feedback = None if decision is None else self.default_feedback(decision)
            if decision is not None and feedback is not None:
                try:
                    self.learner.check(decision, feedback)
                except InvalidInput as err:
                    log.warning("default loss refused for model %s: %s", self.name, err)
                    continue
                self._queue.put_nowait(_Learn(decision, feedback))
        await self.refresh_gauges(now)
        overdue = now - self._last_checkpoint_time >= self.policy.checkpoint_every_seconds
        if self._dirty and overdue:
            try:
                await self.checkpoint()
            except ServiceError:
                pass

    async def refresh_gauges(self, now: float) -> None:
        """Pending events and checkpoint age, as of ``now``."""
        self.metrics.pending.set(await self.store.pending_count(self.name))
        self.metrics.checkpoint_age.set(now - self._last_checkpoint_time)

    # -- checkpoints -----------------------------------------------------------------
    async def checkpoint(self) -> CheckpointInfo:
        """Checkpoint after every feedback accepted so far has been applied."""
        info: CheckpointInfo = await self._through_writer(self._checkpoint_now)
        return info

    async def _checkpoint_now(self) -> CheckpointInfo:
        started = time.perf_counter()
        blob, version = dumps(self.learner), self.learner.version
        try:
            info = await self.store.save_checkpoint(
                self.name, version=version, blob=blob, keep=self.policy.checkpoint_keep,
                now=time.time(),
            )  # fmt: skip
        except Exception as err:
            self.metrics.checkpoint_failures.inc()
            log.error("checkpoint of model %s failed: %s", self.name, err)
            raise ServiceError(503, f"checkpoint failed: {err}") from None
        self.metrics.checkpoint_duration.observe(time.perf_counter() - started)
        self._last_checkpoint_time = time.time()
        self._dirty, self._updates_since_checkpoint = False, 0
        self.metrics.checkpoint_age.set(0.0)
        return info

    async def rollback(self, version: int) -> CheckpointInfo:
        """Restore the newest valid checkpoint of ``version`` and checkpoint it as the newest."""

        async def run() -> CheckpointInfo:
            stored = await self.store.list_checkpoints(self.name)
            found = await newest_valid_checkpoint(
                self.store, self.name, [i for i in stored if i.version == version],
                expected_config=self.learner.config(),
                corrupt_total=self.metrics.checkpoint_corrupt,
            )  # fmt: skip
            if found is None:
                versions = sorted({i.version for i in stored})
                raise ServiceError(
                    404, f"no valid checkpoint of version {version}; stored versions: {versions}",
                    "version",
                )  # fmt: skip
            self.learner = found[0]
            self.metrics.version.set(self.learner.version)
            return await self._checkpoint_now()

        info: CheckpointInfo = await self._through_writer(run)
        return info
