"""The store contract: model records, pending decisions, the feedback log, lease, checkpoints.

Both implementations (:class:`~service.store.sqlite.SqliteStore` and
:class:`~service.store.redis.RedisStore`) pass the same contract tests.

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
the checkpoint to restart from (see ``service.registry``).  Deletion tombstones were
the alternative; they are lost with the data too, so they cannot tell the two apart.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

EventStatus = Literal["pending", "claimed", "expired", "duplicate", "unknown"]


class StoreUnavailable(Exception):
    """The store could not be reached in time (connection refused, timeout, disk error)."""


class ModelGone(StoreUnavailable):
    """The store does not hold the model (deleted, never created, or lost with its data)."""


class FencedOut(Exception):
    """A write with a fencing token older than the newest issued: the lease was lost."""


@dataclass(frozen=True)
class EventLookup:
    """The answer of a peek or claim: a status, the payload when the caller holds it, the offset."""

    status: EventStatus
    payload: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class LogEntry:
    """One acknowledged feedback (or an expired decision when ``feedback`` is None)."""

    offset: int
    event_id: str
    decision: str
    feedback: str | None
    acked_at: float


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


class Store(ABC):
    """Async storage shared by every process of one service; names are valid model names.

    Every method raises :class:`StoreUnavailable` when the store cannot be reached.
    """

    @abstractmethod
    async def ping(self) -> None:
        """Raise :class:`StoreUnavailable` when the store cannot be reached."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

    @abstractmethod
    async def epoch(self) -> str:
        """The store's epoch id, written when first asked; a new one after the data was lost."""

    # -- model records -------------------------------------------------------------
    @abstractmethod
    async def hold_model(
        self,
        name: str,
        *,
        known: HeldCounters | None = None,
        offer: OfferedSnapshot | None = None,
        now: float = 0.0,
    ) -> bool:
        """Hold ``name``: its log, lease and checkpoints can be written; True when it was not.

        On a model not held, each counter starts at least at ``known``, the lease is
        revoked (older fencing tokens are refused) and the log goes on after
        ``known.log_last`` (the *base* offset).  ``offer`` is saved as the newest
        checkpoint, at the base offset, when its ``sequence`` is above every snapshot
        offered since the model was held and the log after the base is whole; like an
        operator write it fences out the learner, which restarts from it.
        """

    @abstractmethod
    async def save_model(self, name: str, record: str, *, replace: bool = True) -> None:
        """Store the JSON record (config and policy) that rebuilds model ``name``.

        With ``replace`` False a record already stored is kept.
        """

    @abstractmethod
    async def load_model(self, name: str) -> str | None:
        """The record of ``name``, or None."""

    @abstractmethod
    async def load_models(self) -> dict[str, str]:
        """Every stored model record by name."""

    @abstractmethod
    async def delete_model(self, name: str) -> None:
        """Remove the record, decisions, log, lease and checkpoints of ``name``; stop holding it."""

    # -- pending decisions -----------------------------------------------------------
    @abstractmethod
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        """Store ``(event_id, payload)`` pairs, pending until ``now + ttl_seconds``."""

    @abstractmethod
    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        """``pending`` (with payload), ``expired`` (with payload), ``duplicate`` or ``unknown``."""

    @abstractmethod
    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float
    ) -> EventLookup:
        """Claim a pending decision and append it with ``feedback`` to the log, atomically.

        ``claimed`` with the payload and the new entry's offset, else why not.
        """

    @abstractmethod
    async def expire_events(self, name: str, *, now: float, limit: int, log: bool) -> int:
        """Claim up to ``limit`` decisions past their deadline, each once; log them if ``log``."""

    @abstractmethod
    async def pending_count(self, name: str) -> int:
        """Decisions of ``name`` not yet claimed (expired ones included until swept)."""

    # -- the log ---------------------------------------------------------------------
    @abstractmethod
    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` entries with offsets above ``after``, in order."""

    @abstractmethod
    async def log_bounds(self, name: str) -> LogBounds:
        """The offsets held and the number of entries."""

    # -- lease -----------------------------------------------------------------------
    @abstractmethod
    async def acquire_lease(
        self, name: str, holder: str, *, ttl_seconds: float, now: float
    ) -> int | None:
        """Take the lease when free, lapsed or held by ``holder``: a new fencing token.

        None when another holder has it.
        """

    @abstractmethod
    async def renew_lease(
        self, name: str, holder: str, token: int, *, ttl_seconds: float, now: float
    ) -> bool:
        """Extend a lease still held with ``token``; False when it was lost."""

    @abstractmethod
    async def scan_idle(
        self, holder: str, idle: Sequence[IdleLearner], *, ttl_seconds: float, now: float
    ) -> dict[str, IdleVerdict]:
        """Renew the leases ``holder`` holds for ``idle`` learners and find their work, at once.

        Per model: ``"lost"`` when the lease is no longer ``holder``'s under that token
        (nothing renewed); else the lease is renewed as :meth:`renew_lease` does, and the
        answer is ``"work"`` when the log holds entries after ``offset`` or a checkpoint
        was asked for (the request stays, for the learner to take), ``"idle"`` otherwise.
        One round trip, whatever the number of models.
        """

    @abstractmethod
    async def release_lease(self, name: str, holder: str, token: int) -> None:
        """Give a lease back (a no-op when it is no longer held with ``token``)."""

    @abstractmethod
    async def lease(self, name: str, *, now: float) -> Lease | None:
        """The current lease, or None when free."""

    # -- checkpoints -----------------------------------------------------------------
    @abstractmethod
    async def save_checkpoint(
        self,
        name: str,
        *,
        version: int,
        blob: bytes,
        keep: int,
        now: float,
        offset: int,
        acked_at: float,
        token: int,
    ) -> CheckpointInfo:
        """Store a checkpoint under the next sequence, keep the newest ``keep``, trim the log.

        Raises :class:`FencedOut` when ``token`` is older than the newest issued token, or
        was issued before the model was last held (the store lost its data since).
        ``token`` -1 is an operator write (rollback): it revokes the lease and fences out
        the learner holding it.
        """

    @abstractmethod
    async def list_checkpoints(self, name: str, limit: int = 0) -> list[CheckpointInfo]:
        """Stored checkpoints, newest first (the newest ``limit`` when it is above 0)."""

    @abstractmethod
    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        """The bytes of one checkpoint, or None when it is gone."""

    # -- notifications ---------------------------------------------------------------
    @abstractmethod
    async def request_checkpoint(self, name: str) -> None:
        """Ask the learner of ``name`` to publish a checkpoint now."""

    @abstractmethod
    async def take_checkpoint_request(self, name: str) -> bool:
        """True (once) when a checkpoint was asked for since the last call."""

    @abstractmethod
    async def snapshot_notices(self, timeout_seconds: float) -> set[str]:
        """Names of models with a new checkpoint, waiting up to ``timeout_seconds`` for one.

        One consumer per store object (the process's snapshot watcher).
        """
