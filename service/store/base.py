"""The store contract: model records, pending decisions, the feedback log, lease, checkpoints.

The contract itself is a set of narrow protocols, one per concern
(:mod:`service.store.protocols`); both implementations (:class:`~service.store.sqlite.SqliteStore`
and :class:`~service.store.redis.RedisStore`) pass the same contract tests.

Decision life cycle: ``put_events`` stores a pending decision until its deadline.
``append_feedback`` claims a pending decision and appends ``(decision, feedback)`` to
the model's log in one atomic step (later attempts see ``duplicate``); after the
deadline it answers ``expired`` and leaves the decision to ``expire_events``, which
claims it exactly once and (when asked) appends it to the log without feedback, so
the learner applies the model's default loss.  Tombstones remember used and expired
ids for ``tombstone_seconds`` so that repeats get a precise answer.

The log: entries have increasing integer offsets starting at 1.  A checkpoint records
the offset of the last entry it includes; the model is the newest valid checkpoint
plus the entries after its offset.  Entries at or below the offset of the oldest kept
checkpoint are trimmed when a checkpoint is saved.

Lease and fencing: one learner per model holds a lease (holder id, expiry) with a
fencing token that grows with every new holder.  ``save_checkpoint`` refuses a token
older than the newest one issued (:class:`FencedOut`), so a learner that lost its lease
can never overwrite the work of its successor.

Held models and lost data: a store *holds* a model from :meth:`Store.hold_model` until
:meth:`Store.delete_model`.  Appending to the log, taking the lease and saving a
checkpoint of a model the store does not hold raise :class:`ModelGone`; writing a
pending decision does not.  A store that loses its data (a Redis without persistence,
restarted) loses the marks with everything else, so nothing is appended at offsets
that restart from 1 under a learner that has applied higher ones.  :meth:`Store.epoch`
tells a loss from a deletion: it is a random id written when the store is first used,
and a different one means the data went.  Each process then holds its models again
with the counters it knows (log offsets, checkpoint sequences and fencing tokens go on
from there, never back), rewrites their records and offers the snapshot it serves as
the checkpoint to restart from (see ``service.domain.registry``).  Deletion tombstones were
the alternative; they are lost with the data too, so they cannot tell the two apart.

The store budget (:class:`StoreBudget`): how long one request may wait on the store,
all its store calls together.  A store's socket timeout bounds one call; a request may make several (a feedback reads
its decision, then claims it), wait for a pooled connection or for the lock of its
model's name (while another request creates, loads or deletes that model).  The HTTP
middleware gives each request a :class:`StoreBudget` (``BANDITREE_STORE_BUDGET_SECONDS``,
twice the Redis timeout unless set); every Redis call and the lock waits spend from it,
and once it is spent the request gets :class:`StoreUnavailable` (503) at once.  Only
waiting on the store counts, never CPU work between the calls.  Background work
(learners, sweeps, the snapshot watcher) has no budget; nor do the waits that are the
point of a request (``POST .../checkpoints`` waiting for the learner, pages of a log
export after the first, which get one budget each).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from collections.abc import Awaitable, Iterator, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Literal, TypeVar

_set_attribute = object.__setattr__

EventStatus = Literal["pending", "claimed", "expired", "duplicate", "unknown"]


class StoreUnavailable(Exception):
    """The store could not be reached in time (connection refused, timeout, disk error)."""


class StoreFull(StoreUnavailable):
    """The store cannot write: its file system is full (or under the free-space guard),
    or its last write failed for want of space.  Reads may still work."""


class ModelGone(StoreUnavailable):
    """The store does not hold the model (deleted, never created, or lost with its data)."""


class StoreBehind(StoreUnavailable):
    """The store holds less of a model than this process saw (its log ends before an
    offset this process was given): it came back from an older snapshot."""


class TooManyModels(Exception):
    """A new model's record was refused: the store holds ``held`` models, ``limit`` or more."""

    def __init__(self, held: int, limit: int) -> None:
        super().__init__(f"the store holds {held} models, the limit is {limit}")
        self.held, self.limit = held, limit


class NameTaken(Exception):
    """A new model's record was refused: the store holds a record of that name already."""


#: how long a create's claim on a model's keys lasts if its process dies before
#: :meth:`~service.store.protocols.RecordStore.end_create`
CREATE_CLAIM_SECONDS = 120.0


class FencedOut(Exception):
    """A write with a fencing token older than the newest issued: the lease was lost."""


@dataclass(frozen=True)
class EventLookup:
    """The answer of a peek or claim: a status, the payload when the caller holds it, the offset."""

    status: EventStatus
    payload: str | None = None
    offset: int = 0


@dataclass(frozen=True, init=False)
class LogEntry:
    """One acknowledged feedback (or an expired decision when ``feedback`` is None)."""

    offset: int
    event_id: str
    decision: str
    feedback: str | None
    acked_at: float

    def __init__(
        self, offset: int, event_id: str, decision: str, feedback: str | None, acked_at: float
    ) -> None:
        # the fields in one assignment: a frozen dataclass's own __init__ sets them one
        # object.__setattr__ at a time, half the cost of an entry made for every one read
        _set_attribute(
            self,
            "__dict__",
            {
                "offset": offset,
                "event_id": event_id,
                "decision": decision,
                "feedback": feedback,
                "acked_at": acked_at,
            },
        )


@dataclass(frozen=True)
class LogChunk:
    """Consecutive log entries as columns, offsets ascending: what the learner reads
    (:meth:`~service.store.protocols.LogStore.read_log_chunk`), with no object an entry.

    The columns are the store's own texts, read in one go (SQLite: one row of joined
    texts; Redis: the stream's fields), which the compiled kernel decodes in one call
    (``banditree.kernel.decode_stored``); :meth:`entry` makes the :class:`LogEntry` of
    one entry for the Python path (a form the kernel does not read, a log line).
    """

    offsets: list[int]
    event_ids: list[str]
    decisions: list[str]
    feedbacks: list[str | None]
    acked_at: list[float]

    @classmethod
    def empty(cls) -> LogChunk:
        """A chunk of no entry."""
        return cls([], [], [], [], [])

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, part: slice) -> LogChunk:
        return LogChunk(
            self.offsets[part],
            self.event_ids[part],
            self.decisions[part],
            self.feedbacks[part],
            self.acked_at[part],
        )

    def entry(self, i: int) -> LogEntry:
        """The ``i``-th entry as a :class:`LogEntry`."""
        return LogEntry(
            self.offsets[i], self.event_ids[i], self.decisions[i], self.feedbacks[i],
            self.acked_at[i],
        )  # fmt: skip

    def entries(self) -> list[LogEntry]:
        """Every entry as a :class:`LogEntry`, in order."""
        return [
            LogEntry(*row)
            for row in zip(
                self.offsets, self.event_ids, self.decisions, self.feedbacks, self.acked_at,
                strict=True,
            )
        ]  # fmt: skip

    def after(self, offset: int) -> LogChunk:
        """The entries with offsets above ``offset``."""
        return self[bisect.bisect_right(self.offsets, offset) :]

    @classmethod
    def of(cls, entries: Sequence[LogEntry]) -> LogChunk:
        """The chunk of ``entries`` (in offset order)."""
        return cls(
            [e.offset for e in entries],
            [e.event_id for e in entries],
            [e.decision for e in entries],
            [e.feedback for e in entries],
            [e.acked_at for e in entries],
        )


@dataclass(frozen=True)
class LogBounds:
    """``first`` offset held (0 when empty), ``last`` offset ever appended, entries held.

    ``decisions`` counts every decision ever stored for the model.
    """

    first: int
    last: int
    length: int
    decisions: int = 0


@dataclass(frozen=True)
class IdleLearner:
    """A learner waiting for work: its model, its lease's fencing token, the offset applied."""

    name: str
    token: int
    offset: int


#: what :meth:`Store.scan_idle` says of an idle learner
IdleVerdict = Literal["idle", "work", "lost"]


@dataclass(frozen=True)
class Lease:
    """The learner lease of a model: who holds it, its fencing token, when it lapses."""

    holder: str
    token: int
    expires_at: float


@dataclass(frozen=True)
class CheckpointInfo:
    """One stored checkpoint (a published snapshot).

    ``sequence`` orders saves, ``version`` is the model version, ``offset`` the last log
    entry it includes, ``acked_at`` when the oldest entry first included by it was
    acknowledged (0 when none), ``token`` the fencing token it was written with.
    """

    sequence: int
    version: int
    created_at: float
    size_bytes: int
    offset: int = 0
    acked_at: float = 0.0
    token: int = 0


#: the shortest time used and expired ids are kept after their deadline
MIN_TOMBSTONE_SECONDS = 300.0


@dataclass(frozen=True)
class HeldCounters:
    """What a process knows of a model's counters; a store that lost them goes on from here."""

    log_last: int = 0
    sequence: int = 0
    token: int = 0
    decisions: int = 0


@dataclass(frozen=True)
class OfferedSnapshot:
    """A snapshot a process serves, offered as the checkpoint to restart from after a loss.

    ``sequence`` is the checkpoint sequence it had: the highest offered one wins.
    """

    sequence: int
    version: int
    blob: bytes
    keep: int


def tombstone_seconds(ttl_seconds: float) -> float:
    """How long used and expired ids (and unclaimed events past their deadline) are kept."""
    return max(ttl_seconds, MIN_TOMBSTONE_SECONDS)


def event_deadlines(now: float, ttl_seconds: float) -> tuple[float, float]:
    """``(deadline, keep_until)`` of events stored at ``now`` (both stores use these)."""
    deadline = now + ttl_seconds
    return deadline, deadline + tombstone_seconds(ttl_seconds)


T = TypeVar("T")


class StoreBudget:
    """Seconds left to wait on the store."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.left = seconds

    def spent(self) -> StoreUnavailable:
        """The error of a request whose budget ran out."""
        return StoreUnavailable(f"this request waited its {self.seconds} s on the store")


_budget: ContextVar[StoreBudget | None] = ContextVar("banditree_store_budget", default=None)


@contextlib.contextmanager
def store_budget(seconds: float | None) -> Iterator[None]:
    """Store calls inside wait at most ``seconds`` in all (None: only their own timeouts)."""
    token = enter_budget(seconds)
    try:
        yield
    finally:
        leave_budget(token)


def enter_budget(seconds: float | None) -> Token[StoreBudget | None]:
    """:func:`store_budget` without a context manager (per request, where its generator
    frame costs more than the rest): store calls until :func:`leave_budget` with the
    token returned wait at most ``seconds`` in all."""
    return _budget.set(None if seconds is None else StoreBudget(seconds))


def leave_budget(token: Token[StoreBudget | None]) -> None:
    """End the budget :func:`enter_budget` began."""
    _budget.reset(token)


def budget_seconds() -> float | None:
    """The size of the current budget (None when there is none)."""
    budget = _budget.get()
    return None if budget is None else budget.seconds


async def within_budget(call: Awaitable[T]) -> T:
    """Await ``call``; StoreUnavailable when the current budget runs out first."""
    budget = _budget.get()
    if budget is None:
        return await call
    if budget.left <= 0:
        if asyncio.iscoroutine(call):
            call.close()
        raise budget.spent()
    started = time.monotonic()
    try:
        async with asyncio.timeout(budget.left):
            return await call
    except TimeoutError:
        raise budget.spent() from None
    finally:
        budget.left -= time.monotonic() - started


def _give_up(waiter: asyncio.Future[T], budget: StoreBudget) -> None:
    if not waiter.done():
        waiter.set_exception(budget.spent())


async def wait_within_budget(waiter: asyncio.Future[T]) -> T:
    """:func:`within_budget` for a future: one timer instead of a timeout scope.

    The future itself gets StoreUnavailable when the budget runs out first (whoever
    would have answered it later finds it done).
    """
    budget = _budget.get()
    if budget is None:
        return await waiter
    if budget.left <= 0:
        _give_up(waiter, budget)
        return await waiter
    loop = asyncio.get_running_loop()
    started = loop.time()
    timer = loop.call_at(started + budget.left, _give_up, waiter, budget)
    try:
        return await waiter
    finally:
        timer.cancel()
        budget.left -= loop.time() - started
