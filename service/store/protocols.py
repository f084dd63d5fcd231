"""The store's contract, one narrow protocol per concern.

A part of the service that needs one concern names its protocol (the replay of a log
needs a :class:`LogStore`, a learner a :class:`LeaseStore` ...); :class:`Store` is all
of them, the object :func:`service.store.open_store` gives.  Each backend implements a
concern in a module of its own (``service/store/<backend>/<concern>.py``) and composes
them into one class.  The semantics shared by every concern (the decision life cycle,
the log's offsets, fencing, held models and lost data) are described in
:mod:`service.store.base`.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from typing import Protocol

from service.store.base import (
    CheckpointInfo,
    EventLookup,
    HeldCounters,
    IdleLearner,
    IdleVerdict,
    Lease,
    LogBounds,
    LogChunk,
    LogEntry,
    OfferedSnapshot,
)


class StoreLifecycle(Protocol):
    """Reaching the store: health, shutdown and the epoch that tells a data loss.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
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

    async def durability_warnings(self) -> list[str]:
        """What a crash of the store would lose of what was acknowledged, in words (logged
        at start); none by default."""
        return []


class RecordStore(Protocol):
    """Model records, and which models the store holds (see :mod:`service.store.base`).

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

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
    async def new_epoch(self, *, changes: int = 0) -> str:
        """Forget which models are held and start a new epoch (returned); the count of
        :meth:`changes` goes on from at least ``changes``.

        For a store that came back from an older snapshot: its epoch survived, so every
        process is told this way to write its models back (each model is held again
        with the counters the processes know, as after a loss of the data).
        """

    @abstractmethod
    async def changes(self) -> int:
        """How many times model records were saved or deleted: a store that answers less
        than a process saw came back from an older snapshot."""

    @abstractmethod
    async def save_model(
        self, name: str, record: str, *, replace: bool = True, max_models: int | None = None
    ) -> int:
        """Store the JSON record (config and policy) that rebuilds model ``name``; the
        count of :meth:`changes` after it.

        With ``replace`` False a record already stored is kept.  With ``max_models`` (a
        create), a record is written only for a new name, checked, counted and written in
        one atomic step: :class:`NameTaken` when the name has a record,
        :class:`TooManyModels` when the store holds ``max_models`` records or more.
        Processes creating at once never take the store past the cap, nor overwrite
        each other's model.
        """

    @abstractmethod
    async def begin_create(self, name: str, token: str, *, now: float) -> None:
        """A create of ``name`` (``token``, unique to it) begins, before it writes anything:
        until its :meth:`end_create` (or :data:`~service.store.base.CREATE_CLAIM_SECONDS`
        after ``now``) another create of the name refused leaves the model's keys alone."""

    @abstractmethod
    async def end_create(self, name: str, token: str, *, recorded: bool, now: float) -> bool:
        """The create ``token`` of ``name`` ends.  ``recorded``: the name has a record (this
        create's, or one it found), which owns the model's keys until it is deleted.
        Otherwise the keys written for the name (held, checkpoints, log) are deleted in one
        atomic step, unless another create of the name is under way or recorded; True
        when they were.  The record itself is never touched."""

    @abstractmethod
    async def load_model(self, name: str) -> str | None:
        """The record of ``name``, or None."""

    @abstractmethod
    async def load_models(self) -> dict[str, str]:
        """Every stored model record by name."""

    @abstractmethod
    async def delete_model(self, name: str) -> int:
        """Remove the record, decisions, log, lease and checkpoints of ``name``; stop holding
        it; the count of :meth:`changes` after it."""


class DecisionStore(Protocol):
    """Pending decisions: stored at predict time, claimed once by a feedback or by expiry.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

    @abstractmethod
    async def put_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> None:
        """Store ``(event_id, payload)`` pairs, pending until ``now + ttl_seconds``.

        ``counted``: they add to the model's decision count (:class:`LogBounds`
        ``decisions``); False for pending decisions rewritten in place (an activation),
        which were counted when first stored."""

    @abstractmethod
    def queue_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> asyncio.Future[None]:
        """:meth:`put_events` without waiting: the future is done once they are stored
        (or holds :class:`~service.store.base.StoreUnavailable`).  Called on the event
        loop; the caller waits on the future within its store budget
        (:func:`~service.store.base.wait_within_budget`)."""

    @abstractmethod
    async def put_new_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
    ) -> list[EventLookup]:
        """:meth:`put_events` (counted) of decisions under ids a caller gave, only if
        none of the ids is known to the model yet: one atomic step, whichever process
        or request tries the same ids at the same moment, so one decision is stored
        and counted per id.

        ``[]`` when every decision was stored; else nothing was stored and the answer
        holds what each id has now (:meth:`peek_event`'s answers, ``unknown`` for the
        ids still free)."""

    @abstractmethod
    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        """``pending`` (with payload), ``expired`` (with payload), ``duplicate`` or ``unknown``."""

    async def peek_events(
        self, name: str, event_ids: list[str], *, now: float
    ) -> list[EventLookup]:
        """:meth:`peek_event` of each of ``event_ids``, in order (the calls under way
        together)."""
        return list(await asyncio.gather(*(self.peek_event(name, e, now=now) for e in event_ids)))

    @abstractmethod
    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float, seen: int = 0
    ) -> EventLookup:
        """Claim a pending decision and append it with ``feedback`` to the log, atomically.

        ``claimed`` with the payload and the new entry's offset, else why not.
        :class:`~service.store.base.StoreBehind` (nothing claimed or appended) when the
        log ends before offset ``seen``, which the caller was given before: the store
        came back from an older snapshot, and the offset would be given out again.
        """

    @abstractmethod
    async def expire_events(
        self, name: str, *, now: float, limit: int, log: bool, seen: int = 0
    ) -> int:
        """Claim up to ``limit`` decisions past their deadline, each once; log them if ``log``
        (then :class:`~service.store.base.StoreBehind` as :meth:`append_feedback`'s)."""

    @abstractmethod
    async def pending_count(self, name: str) -> int:
        """Decisions of ``name`` not yet claimed (expired ones included until swept)."""


class LogStore(Protocol):
    """The feedback log of a model: entries with increasing offsets from 1.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

    @abstractmethod
    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        """Up to ``limit`` entries with offsets above ``after``, in order."""

    async def read_log_chunk(self, name: str, *, after: int, limit: int) -> LogChunk:
        """:meth:`read_log`'s entries as columns (what the learner reads); a store
        overrides it to make no object an entry."""
        return LogChunk.of(await self.read_log(name, after=after, limit=limit))

    @abstractmethod
    async def log_bounds(self, name: str) -> LogBounds:
        """The offsets held and the number of entries."""


class LeaseStore(Protocol):
    """The learner lease of a model, with fencing tokens that grow with every holder.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

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

    @abstractmethod
    async def announce_learner(
        self, holder: str, *, ttl_seconds: float, now: float
    ) -> tuple[int, int]:
        """Say that learner process ``holder`` is alive until ``now + ttl_seconds`` (a
        heartbeat): the number of learner processes alive now, ``holder`` included, and
        the number of models the store holds (0 when the store does not count them)."""

    @abstractmethod
    async def withdraw_learner(self, holder: str) -> None:
        """Say that learner process ``holder`` stops (the others take its share at once)."""


class CheckpointStore(Protocol):
    """Published snapshots of a model, saved under a fencing token.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

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


class NotificationStore(Protocol):
    """Checkpoint requests to a model's learner, and notices of new checkpoints.

    Every method raises :class:`~service.store.base.StoreUnavailable` when the store
    cannot be reached.
    """

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


class Store(
    StoreLifecycle,
    RecordStore,
    DecisionStore,
    LogStore,
    LeaseStore,
    CheckpointStore,
    NotificationStore,
    Protocol,
):
    """Async storage shared by every process of one service: every concern at once.

    Names are valid model names.
    """
