"""The serving side of one model: decide on the current snapshot, log feedback durably.

Predictions read the snapshot this process serves (an immutable learner replaced
whole by :mod:`service.domain.runtime.snapshot`) and store each decision as pending, one
store write per request.  A feedback is validated against its pending decision, then
claimed and appended to the model's log in one atomic store step; only then is it
acknowledged.  Learning happens elsewhere (:mod:`service.domain.runtime.learner`).

When the store cannot be reached, predictions are still answered from the snapshot in
memory, marked as not logged (their feedback cannot be taken) and counted in
``banditree_unlogged_predictions_total``; feedback gets 503.

**Decisions of one tick** (:class:`TickDecisions`): the one-context predictions of one
event-loop tick are decided together.  Requests that reach the event loop together already share one store commit (the
decision writes of a tick go out together); :class:`TickDecisions` makes them share
the decision too.  Each one-context predict of a model queues its context and waits;
a callback queued behind them decides every context queued in that tick in one
batched ``act_columns`` (one model pass, one draw), takes their event ids in one call,
writes the records in one pass, queues their writes in one store call (the same
store commit; one call per :data:`WRITE_CHUNK` decisions) and hands each request its
answer and the future of that write.  A request answers once the write holding its
decision is stored, so a decision is still stored before its answer; one that waits
does so on a future of its own (:func:`own_waiter`), so a request that gives up ends
only its own wait.

The decisions are those of ``act`` called one by one: every draw is fixed by the
decision's event id (:func:`banditree.explore.event_uniforms`), and ``act_columns``
makes, row for row, the decisions of ``act`` on the same snapshot where the learner
says so (``batch_exact``: a single DGT, with or without named features, or a boosted
model, whose batch is ``act`` row by row).  A tick with
fewer than :data:`MIN_BATCH` requests, another learner (a forest's or TEL's batched
pass sums in another order; an apprentice's batch is ``act`` row by row anyway) or a
batch ``act_columns`` refuses is decided one request at a time with ``act``, so each
request gets its own decision or its own error.

**Event ids** (:func:`new_event_ids`): unguessable, cheap to make, neighbours in a
store's index.  An event id is 36 hex digits: the time in milliseconds (12 digits), then 96 random bits
(24 digits).  The random bits come from the operating system's CSPRNG (``secrets``),
drawn in blocks of :data:`BLOCK_IDS` ids at a time rather than one system call per
id: each id's bits are still independent and unpredictable (knowing every other id
tells nothing about it), at a fraction of the cost.  A block is never shared: it is
taken under a lock, and a forked child drops its parent's block.  The time prefix makes
successive ids neighbours in a store's index, so the embedded store appends decisions
to the end of its B-tree instead of writing a random page for each.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Protocol

import orjson
from orjson import Fragment

from banditree import kernel
from banditree.core.codec import (
    column_payloads,
    columns_public,
    decision_payload,
    decision_public,
    feedback_json,
    read_decision,
)
from banditree.kernel.rows import stack_rows, write_rows
from banditree.learners import (
    Decision,
    DecisionColumns,
    Feedback,
    InvalidInput,
    Learner,
)
from service.domain.errors import (
    FEEDBACK_REFUSALS,
    FeedbackRefused,
    InvalidRequest,
    Unavailable,
)
from service.domain.runtime.operator import OperatorWrites
from service.domain.runtime.policy import Policy
from service.domain.runtime.snapshot import ServedSnapshot
from service.store import (
    CheckpointInfo,
    EventLookup,
    ModelGone,
    Store,
    StoreBehind,
    StoreUnavailable,
)
from service.store.base import wait_within_budget
from service.telemetry.metrics import ModelMetrics

log = logging.getLogger("banditree.service")

#: the pending count of a model is read again only once this many times the time its
#: last read took has passed: the count is O(pending decisions) in a store (a million
#: rows of the embedded store: about 0.15 s of a worker thread), so at most 1% of the
#: time goes to it, and a small model's is read at every pass
PENDING_READ_SPACING = 100.0
#: decisions one store call expires: in the embedded store a transaction of about 15 ms
#: of the event loop (11-17 us a decision); a sweep makes as many calls as are due
EXPIRE_CHUNK = 1000
#: store status (also the ``outcome`` label) -> HTTP status and message
_UNAVAILABLE = (
    "the store is unreachable: the feedback may not have been recorded; retry it "
    "(a repeat of a feedback that was recorded answers 409)"
)


class ModelRuntime(OperatorWrites):
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
        on_behind: Callable[[str, str], None] | None = None,
        on_initial_snapshot: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.uid = name, uid
        self.policy, self.store, self.metrics = policy, store, metrics
        self.served = ServedSnapshot(self, learner, last_checkpoint, on_initial_snapshot)
        self.wake_learner = wake_learner  # work for this process's learner: look now
        self.on_gone = on_gone  # the store no longer holds the model: deleted, or data lost
        self.on_behind = on_behind  # (name, uid): the store came back from an older snapshot
        self.log_last = last_checkpoint.offset if last_checkpoint else 0
        self.decisions_total = 0  # as last seen in the store, plus this process's since
        self._leaves_sum, self._leaves_count = 0.0, 0
        self._tick = TickDecisions(self)  # one-context predictions decided per loop tick
        #: decisions under ids a caller gave, being decided now (``given_ids``)
        self.given_in_flight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._pending_due = 0.0  # when the pending count is read again (refresh_gauges)
        #: as of the last refresh_gauges: decisions awaiting feedback, the learner lease's
        #: holder (None: nobody, or not read yet)
        self.pending_decisions: int | None = None
        self.lease_holder: str | None = None

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
    async def predict(
        self, contexts: list[Any], defaults: list[int] | None = None
    ) -> tuple[list[Decision], bool]:
        """Decide for the one context of ``contexts`` and store the decision:
        ``([decision], logged)``.  A batch goes through :meth:`predict_columns`.

        ``defaults`` (the caller's default action of each context) is played by an
        apprentice-mode model and ignored by others."""
        started = time.perf_counter()
        (context,) = contexts
        default = None if defaults is None else defaults[0]
        decisions = [act_one(self.learner, context, default, new_event_ids(1)[0])]
        events = [(d.event_id, decision_payload(self.uid, d)) for d in decisions]
        leaves = [d.extras["reachable_leaves"] for d in decisions if "reachable_leaves" in d.extras]
        explored = sum(d.explored for d in decisions)
        return decisions, await self._store(events, explored, leaves, started)

    async def predict_in_tick(
        self, contexts: list[Any], defaults: list[int] | None = None
    ) -> tuple[dict[str, Any], bool]:
        """:meth:`predict` of one context decided with the others of this loop tick
        (:mod:`service.domain.runtime.api`): ``(public answer, logged)``, answered
        once its decision is stored."""
        started = time.perf_counter()
        (context,) = contexts
        public, stored = await self._tick.add(context, None if defaults is None else defaults[0])
        logged = True  # as _counted(_settled(stored)), two coroutines fewer a request
        try:
            if stored.done():
                stored.result()
            else:  # the tick's write is shared: this request waits on a future of its own
                await wait_within_budget(own_waiter(stored))
        except StoreUnavailable as err:
            self.answered_unlogged(1, err)
            logged = False
        self.count_stored(1 if logged else 0, 1, started)
        if not logged and type(public) is Fragment:  # the caller adds "logged": a dict
            public = orjson.loads(orjson.dumps(public))
        return public, logged

    async def predict_columns(
        self, contexts: list[Any], defaults: list[int] | None = None
    ) -> tuple[DecisionColumns, bool]:
        """:meth:`predict` of a batch, its decisions held column by column (no object per row)."""
        started = time.perf_counter()
        learner, event_ids = self.learner, new_event_ids(len(contexts))
        apprentice = learner.apprentice
        if defaults is not None and apprentice is not None:
            columns = apprentice.act_columns(contexts, event_ids, default_actions=defaults)
        else:
            columns = learner.act_columns(contexts, event_ids)
        written = write_rows(self.uid, columns)  # the answers and records in one pass
        if written is None:
            payloads = column_payloads(self.uid, columns)
        else:
            answers, payloads = written
            columns = replace(columns, public_json=b"[" + b",".join(answers) + b"]")
        events = list(zip(columns.event_ids, payloads, strict=True))
        leaves = (columns.extras or {}).get("reachable_leaves") or []
        return columns, await self._store(events, sum(columns.explored), leaves, started)

    async def _store(
        self, events: list[tuple[str, str]], explored: int, leaves: list[float], started: float
    ) -> bool:
        """Store the decisions and count them; False when the store could not be reached."""
        writing = self.store.put_events(
            self.name, events, now=time.time(), ttl_seconds=self.policy.event_ttl_seconds
        )
        logged = await self._counted(writing, len(events), started)
        self.count_decided(explored, leaves)
        return logged

    async def _counted(self, writing: Awaitable[None], count: int, started: float) -> bool:
        """Wait for the write of ``count`` decisions and count them: False (answered
        without logging) when the store could not be reached."""
        logged = True
        try:
            await writing
        except StoreUnavailable as err:
            self.answered_unlogged(count, err)
            logged = False
        self.count_stored(count if logged else 0, count, started)
        return logged

    def answered_unlogged(self, count: int, err: StoreUnavailable) -> None:
        """``count`` decisions answered without being stored: the store was away."""
        log.warning("model %s answers without logging: %s", self.name, err)
        self.metrics.unlogged.inc(count)

    def count_stored(self, stored: int, answered: int, started: float) -> None:
        """Count ``stored`` decisions (of every process's, as the store counts them) and
        ``answered`` predictions of this process."""
        m = self.metrics
        self.decisions_total += stored
        m.tick.inc_observe(  # the counters and the histogram are updated once per loop tick
            m.predictions, answered, m.predict_latency, time.perf_counter() - started
        )

    def count_decided(self, explored: int, leaves: list[float]) -> None:
        """Count decisions made: ``explored`` of them explored; ``leaves`` reachable each."""
        m = self.metrics
        if explored:
            m.tick.inc(m.explored, explored)
        if leaves:
            self._leaves_sum += float(sum(leaves))
            self._leaves_count += len(leaves)
            m.reachable_leaves.set(self._leaves_sum / self._leaves_count)

    # -- feedback --------------------------------------------------------------------
    def _refuse(self, found: EventLookup, event_id: str) -> FeedbackRefused:
        refusal = FEEDBACK_REFUSALS.get(found.status, FEEDBACK_REFUSALS["unknown"])
        self.metrics.feedback[refusal.outcome].inc()
        return refusal(event_id)

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
                raise InvalidRequest(detail, err.field) from None
            claimed = await self.store.append_feedback(
                self.name, event_id, feedback_json(feedback), now=time.time(),
                seen=self.log_last,
            )  # fmt: skip
        except StoreUnavailable as err:
            log.error("model %s could not log feedback %s: %s", self.name, event_id, err)
            if isinstance(err, ModelGone) and self.on_gone is not None:
                self.on_gone()
            if isinstance(err, StoreBehind) and self.on_behind is not None:
                self.on_behind(self.name, self.uid)
            raise Unavailable(_UNAVAILABLE) from None
        if claimed.status != "claimed":
            raise self._refuse(claimed, event_id)
        self.log_last = max(self.log_last, claimed.offset)
        self.metrics.feedback["applied"].inc()
        if self.wake_learner is not None:
            self.wake_learner()
        return claimed.offset

    async def sweep(self, now: float) -> float:
        """Expire every decision overdue at ``now``, :data:`EXPIRE_CHUNK` a store call,
        letting requests run between two calls; those of a model with a default loss go
        to the log.  The seconds the calls that expired a whole chunk took (the work
        that grows with the decisions that arrived).

        No cap per sweep: as many decisions expire as are due, so unanswered decisions
        never outgrow their reward wait however fast they arrive (a cap of 1,000 a
        second let a million of them pile up).
        """
        logged = self.policy.default_loss is not None
        await self.refresh_bounds()
        busy = 0.0
        while True:
            started = time.monotonic()
            try:
                expired = await self.store.expire_events(
                    self.name, now=now, limit=EXPIRE_CHUNK, log=logged, seen=self.log_last
                )
            except StoreBehind:
                if self.on_behind is not None:
                    self.on_behind(self.name, self.uid)
                raise
            if expired:
                self.metrics.expired.inc(expired)
                if logged and self.wake_learner is not None:
                    self.wake_learner()
            if expired < EXPIRE_CHUNK:
                return busy
            busy += time.monotonic() - started
            await asyncio.sleep(0)  # requests between two calls

    async def refresh_bounds(self) -> None:
        """Last log offset, log length and decisions made, from the store."""
        bounds = await self.store.log_bounds(self.name)
        self.log_last = max(self.log_last, bounds.last)
        self.decisions_total = max(self.decisions_total, bounds.decisions)
        self.metrics.log_entries.set(bounds.length)

    async def refresh_gauges(self, now: float) -> None:
        """Pending decisions, log length, lease holder and checkpoint age, as of ``now``
        (pending decisions at most every :data:`PENDING_READ_SPACING` times the read)."""
        m = self.metrics
        if now >= self._pending_due:
            started = time.perf_counter()
            self.pending_decisions = await self.store.pending_count(self.name)
            m.pending.set(self.pending_decisions)
            self._pending_due = now + PENDING_READ_SPACING * (time.perf_counter() - started)
        await self.refresh_bounds()
        m.checkpoint_age.set(now - self.served.published_at if self.served.published_at else 0)
        lease = await self.store.lease(self.name, now=now)
        self.lease_holder = None if lease is None else lease.holder
        m.set_lease_holder(self.lease_holder)


#: ids whose random bits one draw from the CSPRNG supplies
BLOCK_IDS = 4096
_HEX_PER_ID = 24  # 96 bits


class _Pool:
    """Random hex digits drawn from ``secrets`` in blocks, handed out once each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.digits = ""
        self.at = 0

    def reset(self) -> None:
        self.digits, self.at = "", 0

    def take(self, count: int) -> str:
        """``24 * count`` fresh random hex digits."""
        need = _HEX_PER_ID * count
        with self.lock:
            if self.at + need > len(self.digits):
                self.digits = secrets.token_bytes(12 * max(BLOCK_IDS, count)).hex()
                self.at = 0
            start = self.at
            self.at = start + need
            return self.digits[start : start + need]


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.reset)


def new_event_ids(count: int) -> list[str]:
    """``count`` fresh event ids: the time in milliseconds (12 hex digits), then 96 random bits."""
    prefix = f"{time.time_ns() // 1_000_000:012x}"
    noise = _POOL.take(count)
    if count == 1:
        return [prefix + noise]
    return [prefix + noise[i : i + _HEX_PER_ID] for i in range(0, _HEX_PER_ID * count, _HEX_PER_ID)]


#: from this many requests in a tick, one ``act_columns`` decides them all (below it
#: the per-row ``act`` costs less than the batched pass's fixed cost; the compiled
#: kernel's fixed cost is smaller: benchmarks/results/service_kernel.md)
MIN_BATCH = 3 if kernel.ACTIVE == "native" else 6

#: decisions of one tick written by one store call at most (the Redis store's
#: transaction bound, :data:`service.store.redis.decision_writes.FULL_BATCH`)
WRITE_CHUNK = 256

#: what a request gets back: its public answer and the future of its decision's write
#: (shared with the others of its tick)
Answer = tuple[dict[str, Any], "asyncio.Future[None]"]
#: a queued request: its context, its caller's default action, where its answer goes
_Queued = tuple[Any, int | None, "asyncio.Future[Answer]"]


def _pass_on(waiter: asyncio.Future[None], shared: asyncio.Future[None]) -> None:
    # the shared error is read even when nobody waits (else asyncio logs it as unread)
    error = None if shared.cancelled() else shared.exception()
    if waiter.done():  # its request gave up waiting
        return
    if shared.cancelled():
        waiter.cancel()
    elif error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(None)


def own_waiter(shared: asyncio.Future[None]) -> asyncio.Future[None]:
    """A future of one request's own that ends as the tick's ``shared`` write does: a
    request that gives up (its budget spent, its client gone) ends only its own."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    shared.add_done_callback(functools.partial(_pass_on, waiter))
    return waiter


class Decided:
    """The decisions of a tick: one public answer and one stored payload per request, in
    order, and what the metrics count (explorations, reachable leaves)."""

    __slots__ = ("explored", "leaves", "payloads", "publics")

    def __init__(
        self, publics: list[Any], payloads: list[Any], explored: int, leaves: list[float]
    ) -> None:
        self.publics, self.payloads = publics, payloads
        self.explored, self.leaves = explored, leaves


def act_one(learner: Learner, context: Any, default: int | None, event_id: str) -> Decision:
    """``act`` for one context: the caller's default action played by an apprentice-mode
    learner, ignored by others."""
    apprentice = learner.apprentice
    if default is not None and apprentice is not None:
        return apprentice.act(context, event_id=event_id, default_action=default)
    return learner.act(context, event_id=event_id)


def decide_one(
    learner: Learner, uid: str, context: Any, default: int | None, event_id: str
) -> tuple[Decision, dict[str, Any], str]:
    """``act`` for one request: the decision, its public answer and its stored payload."""
    decision = act_one(learner, context, default, event_id)
    return decision, decision_public(decision), decision_payload(uid, decision)


def decide_batch(learner: Learner, uid: str, contexts: list[Any], event_ids: list[str]) -> Decided:
    """One ``act_columns`` for every context: the answers and payloads that ``act`` gives
    one by one (the caller's defaults are ignored: not an apprentice-mode learner).

    Contexts that are all lists of finite floats of the model's width (the bodies
    ``parse_row`` read) go to ``act_columns`` with their array, made in one kernel call
    as a batch predict's body gives it, not converted by numpy row by row."""
    width = getattr(learner, "n_features", None)
    stacked = stack_rows(contexts, width) if type(width) is int else None
    columns = learner.act_columns(contexts if stacked is None else stacked, event_ids)
    leaves = (columns.extras or {}).get("reachable_leaves") or []
    explored = sum(columns.explored)
    written = write_rows(uid, columns)  # each answer's JSON and each record in one pass
    if written is not None:
        return Decided(list(map(Fragment, written[0])), written[1], explored, leaves)
    return Decided(columns_public(columns), column_payloads(uid, columns), explored, leaves)


class Runtime(Protocol):
    """What a tick's decisions read of the model's runtime (:class:`~service.domain.runtime.ModelRuntime`)."""

    name: str
    uid: str
    store: Store
    policy: Policy

    @property
    def learner(self) -> Learner: ...

    def count_decided(self, explored: int, leaves: list[float]) -> None: ...


class TickDecisions:
    """The queued one-context predictions of one model (:meth:`ModelRuntime.predict_in_tick`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._queue: list[_Queued] = []

    def add(self, context: Any, default: int | None) -> asyncio.Future[Answer]:
        """Queue one request's context: its answer comes with those of the same tick."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._queue.append((context, default, answer))
        if len(self._queue) == 1:
            loop.call_soon(self._decide)
        return answer

    def _decide(self) -> None:
        """Decide every request queued in this tick, queue their writes, hand out answers."""
        queue, self._queue = self._queue, []
        queue = [item for item in queue if not item[2].done()]  # a request that gave up
        if not queue:
            return
        runtime = self.runtime
        learner, ids = runtime.learner, new_event_ids(len(queue))
        decided = None
        if len(queue) >= MIN_BATCH and learner.batch_exact:
            try:
                decided = decide_batch(learner, runtime.uid, [c for c, _, _ in queue], ids)
            except Exception:  # decided one by one: each its own error
                decided = None
        if decided is None:
            decided = self._one_by_one(learner, queue, ids)
        answered: list[tuple[asyncio.Future[Answer], Any]] = []
        events: list[tuple[str, str]] = []
        for (_, _, answer), public, event_id, payload in zip(
            queue, decided.publics, ids, decided.payloads, strict=True
        ):
            if isinstance(public, BaseException):
                answer.set_exception(public)
                continue
            answered.append((answer, public))
            events.append((event_id, payload))
        # one store write for the tick's decisions (at most WRITE_CHUNK a write): the
        # requests share its future (each waits on its own: :func:`stored_wait`)
        store, now, ttl = runtime.store, time.time(), runtime.policy.event_ttl_seconds
        for start in range(0, len(events), WRITE_CHUNK):
            part = answered[start : start + WRITE_CHUNK]
            try:
                stored = store.queue_events(
                    runtime.name, events[start : start + WRITE_CHUNK], now=now, ttl_seconds=ttl
                )
            except Exception as err:  # the requests' own error, as before
                for answer, _ in part:
                    answer.set_exception(err)
                continue
            for answer, public in part:
                answer.set_result((public, stored))
        runtime.count_decided(decided.explored, decided.leaves)

    def _one_by_one(self, learner: Learner, queue: list[_Queued], ids: list[str]) -> Decided:
        """:func:`decide_one` per request; a request's error takes its answer's place."""
        publics: list[Any] = []
        payloads: list[Any] = []
        explored = 0
        leaves: list[float] = []
        uid = self.runtime.uid
        for (context, default, _), event_id in zip(queue, ids, strict=True):
            try:
                decision, public, payload = decide_one(learner, uid, context, default, event_id)
            except Exception as err:  # handed to its own request
                publics.append(err)
                payloads.append(None)
                continue
            publics.append(public)
            payloads.append(payload)
            explored += decision.explored
            if "reachable_leaves" in decision.extras:
                leaves.append(decision.extras["reachable_leaves"])
        return Decided(publics, payloads, explored, leaves)


#: how many least recently used models one use asks to let go, at most
_ASKED_PER_USE = 4


class Residency:
    """Models loaded in memory, least recently used first, with a bound (0: none).

    Which models' objects one process keeps in memory: the least recently used go first.

    A model is loaded on first use (a served runtime on its first request, a learner's model
    when its log has entries to learn), never at start: ten thousand idle models cost their
    records and little else.  With a bound (``BANDITREE_MAX_RESIDENT_MODELS``), each use
    marks the model as the most recent, and past the bound the least recently used are
    asked to let go of their objects.  Only an idle one does (a served runtime with no
    decision of a caller's id in flight; a learner that published everything it learned and
    waits for work); a busy one stays and is asked again at the next use of another model.
    Letting go loses nothing: the store holds the model's newest checkpoint and its log, and
    the next use loads them again.
    """

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._used: OrderedDict[str, Callable[[], bool]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._used)

    def __contains__(self, name: object) -> bool:
        return name in self._used

    def used(self, name: str) -> None:
        """Loaded ``name`` was used now: the most recent."""
        if self.bound and name in self._used:
            self._used.move_to_end(name)

    def loaded(self, name: str, let_go: Callable[[], bool]) -> None:
        """``name`` was loaded now; ``let_go`` drops its objects when it is idle (True)
        or refuses (False: busy).  Past the bound, the least recently used idle ones are
        let go, at most :data:`_ASKED_PER_USE` asked."""
        if not self.bound:
            return
        used = self._used
        used[name] = let_go
        used.move_to_end(name)
        asked = 0
        while len(used) > self.bound and asked < _ASKED_PER_USE:
            oldest, release = next(iter(used.items()))
            if oldest == name:
                return
            asked += 1
            if release():
                del used[oldest]
            else:  # busy: the most recent now, asked again later
                used.move_to_end(oldest)

    def dropped(self, name: str) -> None:
        """``name`` is no longer loaded (let go, deleted or forgotten)."""
        self._used.pop(name, None)
