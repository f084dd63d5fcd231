"""The store interface: model records, pending events with a deadline, checkpoint versions.

Both implementations (:class:`~service.store.embedded.EmbeddedStore` and
:class:`~service.store.redis_store.RedisStore`) pass the same contract tests.

Event life cycle: ``put_events`` stores a pending event until its deadline.
``claim_event`` takes a pending event exactly once (later claims see ``duplicate``);
after the deadline it answers ``expired`` and leaves the event to ``claim_expired``,
which takes it exactly once so a default loss can be applied.  Tombstones remember
used and expired ids for ``tombstone_seconds`` so that repeats get a precise answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

EventStatus = Literal["pending", "claimed", "expired", "duplicate", "unknown"]


@dataclass(frozen=True)
class EventLookup:
    """The answer of a peek or claim: a status and, when the caller holds it, the payload."""

    status: EventStatus
    payload: str | None = None


@dataclass(frozen=True)
class CheckpointInfo:
    """One stored checkpoint: ``sequence`` orders saves, ``version`` is the model version."""

    sequence: int
    version: int
    created_at: float
    size_bytes: int


def tombstone_seconds(ttl_seconds: float) -> float:
    """How long used and expired ids (and unclaimed events past their deadline) are kept."""
    return max(ttl_seconds, 300.0)


def event_deadlines(now: float, ttl_seconds: float) -> tuple[float, float]:
    """``(deadline, keep_until)`` of events stored at ``now`` (both stores use these).

    An event is pending until ``deadline``; it (or its tombstone) is remembered until
    ``keep_until``.
    """
    deadline = now + ttl_seconds
    return deadline, deadline + tombstone_seconds(ttl_seconds)


class Store(ABC):
    """Async storage for one service; names are validated model names."""

    @abstractmethod
    async def ping(self) -> None:
        """Raise when the store cannot be reached."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

    # -- model records -------------------------------------------------------------
    @abstractmethod
    async def save_model(self, name: str, record: str) -> None:
        """Store the JSON record (config and policy) that rebuilds model ``name``."""

    @abstractmethod
    async def load_model(self, name: str) -> str | None:
        """The record of ``name``, or None."""

    @abstractmethod
    async def load_models(self) -> dict[str, str]:
        """Every stored model record by name."""

    @abstractmethod
    async def delete_model(self, name: str) -> None:
        """Remove the record, checkpoints and pending-event index of ``name``."""

    # -- pending events --------------------------------------------------------------
    @abstractmethod
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        """Store ``(event_id, payload)`` pairs, pending until ``now + ttl_seconds``."""

    @abstractmethod
    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        """``pending`` (with payload), ``expired`` (with payload), ``duplicate`` or ``unknown``."""

    @abstractmethod
    async def claim_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        """Take a pending event once: ``claimed`` with its payload, else why not."""

    @abstractmethod
    async def claim_expired(self, name: str, *, now: float, limit: int) -> list[str]:
        """Take up to ``limit`` events past their deadline, each exactly once; their payloads."""

    @abstractmethod
    async def pending_count(self, name: str) -> int:
        """Events of ``name`` not yet claimed (expired ones included until swept)."""

    # -- checkpoints -----------------------------------------------------------------
    @abstractmethod
    async def save_checkpoint(
        self, name: str, *, version: int, blob: bytes, keep: int, now: float
    ) -> CheckpointInfo:
        """Store a checkpoint atomically under the next sequence; keep the newest ``keep``."""

    @abstractmethod
    async def list_checkpoints(self, name: str) -> list[CheckpointInfo]:
        """Stored checkpoints, newest first."""

    @abstractmethod
    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        """The bytes of one checkpoint, or None when it is gone."""
