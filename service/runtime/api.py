"""The serving side of one model: decide on the current snapshot, log feedback durably.

Predictions read the snapshot this process serves (an immutable learner replaced
whole by :mod:`service.runtime.snapshot`) and store each decision as pending, one
store write per request.  A feedback is validated against its pending decision, then
claimed and appended to the model's log in one atomic store step; only then is it
acknowledged.  Learning happens elsewhere (:mod:`service.runtime.learner`).

When the store cannot be reached, predictions are still answered from the snapshot in
memory, marked as not logged (their feedback cannot be taken) and counted in
``banditree_unlogged_predictions_total``; feedback gets 503.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from banditree.learners import Decision, DecisionColumns, Feedback, InvalidInput, Learner
from banditree.persistence import dumps, loads
from service.errors import ServiceError
from service.metrics import ModelMetrics
from service.runtime.replay import column_payloads, decision_payload, feedback_json, read_decision
from service.runtime.snapshot import ServedSnapshot
from service.store import CheckpointInfo, EventLookup, ModelGone, Store, StoreUnavailable
from service.store.budget import budget_seconds, store_budget

log = logging.getLogger("banditree.service")

#: store status (also the ``outcome`` label) -> HTTP status and message
_REFUSALS = {
    "unknown": (404, "is not a pending decision of this model"),
    "duplicate": (409, "has already received its feedback"),
    "expired": (410, "expired before its feedback arrived"),
}
_UNAVAILABLE = (
    "the store is unreachable: the feedback may not have been recorded; retry it "
    "(a repeat of a feedback that was recorded answers 409)"
)
_CHECKPOINT_WAIT_SECONDS = 30.0


def new_event_ids(count: int) -> list[str]:
    """``count`` fresh event ids: the time in milliseconds (12 hex digits), then 96 random bits.

    The random part makes an id unguessable; the time prefix makes successive ids
    neighbours in a store's index, so the embedded store appends decisions to the end
    of its B-tree instead of writing a random page for each.
    """
    prefix = f"{time.time_ns() // 1_000_000:012x}"
    if count == 1:
        return [prefix + secrets.token_hex(12)]
    noise = secrets.token_bytes(12 * count).hex()
    return [prefix + noise[i : i + 24] for i in range(0, 24 * count, 24)]


@dataclass(frozen=True)
class Policy:
    """Resolved per-model service settings."""

    checkpoint_every_updates: int
    checkpoint_every_seconds: float
    event_ttl_seconds: float
    default_loss: float | None
    checkpoint_keep: int


class ModelRuntime:
    """A model served under ``name``: its current snapshot, predict and feedback."""

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
        wake_learner: Callable[[], None] | None = None,
        on_gone: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.uid = name, uid
        self.policy, self.store, self.metrics = policy, store, metrics
        self.served = ServedSnapshot(self, learner, last_checkpoint)
        self.wake_learner = wake_learner  # work for this process's learner: look now
        self.on_gone = on_gone  # the store no longer holds the model: deleted, or data lost
        self.log_last = last_checkpoint.offset if last_checkpoint else 0
        self.decisions_total = 0  # as last seen in the store, plus this process's since
        self._leaves_sum, self._leaves_count = 0.0, 0

    @property
    def learner(self) -> Learner:
        """The learner whose snapshot is served now (read-only here)."""
        return self.served.learner

    @property
    def counters(self) -> dict[str, float]:
        """The served learner's counters, with the decisions of every process."""
        return {**self.learner.counters, "decisions": self.decisions_total}

    @property
    def pending_updates(self) -> int:
        """Acknowledged feedback not yet in the served snapshot (as last seen)."""
        return max(0, self.log_last - self.served.offset)

    # -- predict ---------------------------------------------------------------------
    async def predict(self, contexts: list[Any]) -> tuple[list[Decision], bool]:
        """Decide for the one context of ``contexts`` and store the decision:
        ``([decision], logged)``.  A batch goes through :meth:`predict_columns`."""
        started = time.perf_counter()
        (context,) = contexts
        decisions = [self.learner.act(context, event_id=new_event_ids(1)[0])]
        events = [(d.event_id, decision_payload(self.uid, d)) for d in decisions]
        leaves = [d.extras["reachable_leaves"] for d in decisions if "reachable_leaves" in d.extras]
        explored = sum(d.explored for d in decisions)
        return decisions, await self._store(events, explored, leaves, started)

    async def predict_columns(self, contexts: list[Any]) -> tuple[DecisionColumns, bool]:
        """:meth:`predict` of a batch, its decisions held column by column (no object per row)."""
        started = time.perf_counter()
        columns = self.learner.act_columns(contexts, new_event_ids(len(contexts)))
        events = list(zip(columns.event_ids, column_payloads(self.uid, columns), strict=True))
        leaves = (columns.extras or {}).get("reachable_leaves") or []
        return columns, await self._store(events, sum(columns.explored), leaves, started)

    async def _store(
        self, events: list[tuple[str, str]], explored: int, leaves: list[float], started: float
    ) -> bool:
        """Store the decisions and count them; False when the store could not be reached."""
        m = self.metrics
        logged = True
        try:
            await self.store.put_events(
                self.name, events, now=time.time(), ttl_seconds=self.policy.event_ttl_seconds
            )
        except StoreUnavailable as err:
            log.warning("model %s answers without logging: %s", self.name, err)
            m.unlogged.inc(len(events))
            logged = False
        if logged:
            self.decisions_total += len(events)
        m.predictions.inc(len(events))
        if explored:
            m.explored.inc(explored)
        if leaves:
            self._leaves_sum += float(sum(leaves))
            self._leaves_count += len(leaves)
            m.reachable_leaves.set(self._leaves_sum / self._leaves_count)
        m.predict_latency.observe(time.perf_counter() - started)
        return logged

    # -- feedback --------------------------------------------------------------------
    def _refuse(self, found: EventLookup, event_id: str) -> ServiceError:
        outcome = found.status if found.status in _REFUSALS else "unknown"
        status, text = _REFUSALS[outcome]
        self.metrics.feedback[outcome].inc()
        return ServiceError(status, f"event_id {event_id!r} {text}", "event_id")

    async def feedback(self, event_id: str, feedback: Feedback, *, field: str = "loss") -> int:
        """Validate, then claim the decision and log the feedback atomically: the log offset."""
        try:
            found = await self.store.peek_event(self.name, event_id, now=time.time())
            if found.status != "pending":
                raise self._refuse(found, event_id)
            decision = read_decision(found.payload or "{}", self.uid)
            if decision is None:
                raise self._refuse(EventLookup("unknown"), event_id)
            try:
                self.learner.check(decision, feedback)
            except InvalidInput as err:
                self.metrics.feedback["invalid"].inc()
                detail = str(err) if field == "loss" else f"{err} (computed from {field})"
                raise ServiceError(422, detail, err.field) from None
            claimed = await self.store.append_feedback(
                self.name, event_id, feedback_json(feedback), now=time.time()
            )
        except StoreUnavailable as err:
            log.error("model %s could not log feedback %s: %s", self.name, event_id, err)
            if isinstance(err, ModelGone) and self.on_gone is not None:
                self.on_gone()
            raise ServiceError(503, _UNAVAILABLE) from None
        if claimed.status != "claimed":
            raise self._refuse(claimed, event_id)
        self.log_last = max(self.log_last, claimed.offset)
        self.metrics.feedback["applied"].inc()
        if self.wake_learner is not None:
            self.wake_learner()
        return claimed.offset

    async def sweep(self, now: float) -> None:
        """Expire overdue decisions; those of a model with a default loss go to the log."""
        logged = self.policy.default_loss is not None
        await self.refresh_bounds()
        expired = await self.store.expire_events(self.name, now=now, limit=1000, log=logged)
        if expired:
            self.metrics.expired.inc(expired)
            if logged and self.wake_learner is not None:
                self.wake_learner()

    async def refresh_bounds(self) -> None:
        """Last log offset, log length and decisions made, from the store."""
        bounds = await self.store.log_bounds(self.name)
        self.log_last = max(self.log_last, bounds.last)
        self.decisions_total = max(self.decisions_total, bounds.decisions)
        self.metrics.log_entries.set(bounds.length)

    async def refresh_gauges(self, now: float) -> None:
        """Pending decisions, log length, lease holder and checkpoint age, as of ``now``."""
        m = self.metrics
        m.pending.set(await self.store.pending_count(self.name))
        await self.refresh_bounds()
        m.checkpoint_age.set(now - self.served.published_at if self.served.published_at else 0)
        lease = await self.store.lease(self.name, now=now)
        m.set_lease_holder(None if lease is None else lease.holder)

    # -- checkpoints -----------------------------------------------------------------
    async def checkpoint(self) -> CheckpointInfo:
        """Ask the learner for a checkpoint holding every feedback logged so far; wait for it."""
        try:
            last = (await self.store.log_bounds(self.name)).last
            stored = await self.store.list_checkpoints(self.name, limit=1)
            before = stored[0].sequence if stored else 0
            await self.store.request_checkpoint(self.name)
            if self.wake_learner is not None:  # an idle learner of this process looks now
                self.wake_learner()
            deadline = time.monotonic() + _CHECKPOINT_WAIT_SECONDS
            each = budget_seconds()  # waiting for the learner is the point: each look has one
            while time.monotonic() < deadline:
                with store_budget(each):
                    stored = await self.store.list_checkpoints(self.name, limit=1)
                if stored and stored[0].sequence > before and stored[0].offset >= last:
                    await self.served.refresh()
                    return stored[0]
                await asyncio.sleep(0.01)
        except StoreUnavailable as err:
            raise ServiceError(503, f"checkpoint failed: {err}") from None
        raise ServiceError(
            503,
            f"no learner published a checkpoint within {_CHECKPOINT_WAIT_SECONDS:.0f} s; "
            "is a process with role learner or all running?",
        )

    async def replace(self, change: Callable[[Learner], None]) -> CheckpointInfo:
        """Make a changed copy of the served model the newest checkpoint (an operator write).

        The checkpoint keeps the served snapshot's log offset: the learner, fenced out by
        the operator token, restarts from it and learns again every feedback logged
        after it, so nothing acknowledged is lost.  Used to switch an apprentice's mode.
        """
        served = self.served

        def changed_copy() -> tuple[int, bytes]:  # the served learner itself stays as it is
            copy = loads(dumps(served.learner))
            change(copy)
            return copy.version, dumps(copy)

        try:
            version, blob = await asyncio.to_thread(changed_copy)
            saved = await self.store.save_checkpoint(
                self.name, version=version, blob=blob, keep=self.policy.checkpoint_keep,
                now=time.time(), offset=served.offset, acked_at=0.0, token=-1,
            )  # fmt: skip
            await served.refresh()
        except StoreUnavailable as err:
            raise ServiceError(503, f"the change was not saved: {err}") from None
        if self.wake_learner is not None:
            self.wake_learner()
        return saved

    async def rollback(self, version: int) -> CheckpointInfo:
        """Serve the newest valid checkpoint of ``version`` again (saved as the newest).

        Feedback logged before the rollback and not in that checkpoint is discarded;
        the learner is fenced out, restarts from the rolled-back checkpoint and
        learns from the feedback logged after it.
        """
        try:
            found = await self.served.find_version(version)
            if found is None:
                versions = sorted({i.version for i in await self.store.list_checkpoints(self.name)})
                raise ServiceError(
                    404, f"no valid checkpoint of version {version}; stored versions: {versions}",
                    "version",
                )  # fmt: skip
            blob, info = found
            last = (await self.store.log_bounds(self.name)).last
            saved = await self.store.save_checkpoint(
                self.name, version=info.version, blob=blob, keep=self.policy.checkpoint_keep,
                now=time.time(), offset=max(last, self.log_last), acked_at=0.0, token=-1,
            )  # fmt: skip
            await self.served.refresh()
        except StoreUnavailable as err:
            raise ServiceError(503, f"rollback failed: {err}") from None
        if self.wake_learner is not None:
            self.wake_learner()
        return saved
