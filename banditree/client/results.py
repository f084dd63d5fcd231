"""Typed results of the client's calls (the service's JSON, as dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from banditree.core.codec import public_fields


@dataclass(frozen=True)
class PredictResult:
    """One decision.  Classification: ``action`` played with ``probability``, the model's
    ``greedy_action``; regression: ``value`` to play (``probes`` for two-point)."""

    event_id: str
    model_version: int
    leaf: int | None = None
    action: int | None = None
    probability: float | None = None
    greedy_action: int | None = None
    value: float | None = None
    greedy_value: float | None = None
    probes: tuple[float, float] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PredictResult:
        """Read a public answer (:func:`banditree.core.codec.public_fields`)."""
        return cls(**public_fields(data))


def _ranking(rows: list[dict[str, Any]]) -> tuple[tuple[str, float], ...]:
    """``[{id, probability}]`` of an answer as ``((id, probability), ...)``."""
    return tuple((str(r["id"]), float(r["probability"])) for r in rows)


@dataclass(frozen=True)
class RankResult:
    """One ranking: ``reward_action_id`` to show, every candidate's ``(id, probability)``
    (the one to show first, excluded ones last at 0), the ``event_id`` to reward."""

    event_id: str
    model_version: int
    reward_action_id: str
    ranking: tuple[tuple[str, float], ...]
    logged: bool = True

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RankResult:
        return cls(
            event_id=str(data["event_id"]),
            model_version=int(data.get("model_version", 0)),
            reward_action_id=str(data["reward_action_id"]),
            ranking=_ranking(data["ranking"]),
            logged=bool(data.get("logged", True)),
        )


@dataclass(frozen=True)
class SlotResult:
    """One slot of a multi-slot ranking: the candidate to show there (None: no candidate
    was left for it) and the slot's ranking."""

    id: str
    reward_action_id: str | None
    ranking: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class MultiSlotRankResult:
    """A multi-slot ranking: each slot's result, in the slots' order, and the event id."""

    event_id: str
    model_version: int
    slots: tuple[SlotResult, ...]
    logged: bool = True

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MultiSlotRankResult:
        slots = tuple(
            SlotResult(
                id=str(s["id"]),
                reward_action_id=None
                if s["reward_action_id"] is None
                else str(s["reward_action_id"]),
                ranking=_ranking(s["ranking"]),
            )
            for s in data["slots"]
        )
        return cls(
            event_id=str(data["event_id"]),
            model_version=int(data.get("model_version", 0)),
            slots=slots,
            logged=bool(data.get("logged", True)),
        )


@dataclass(frozen=True)
class FeedbackResult:
    """``accepted``, or ``already_accepted`` when the service had this event's feedback
    already (a retried request whose first answer was lost)."""

    event_id: str
    status: Literal["accepted", "already_accepted"]


@dataclass(frozen=True)
class ModelInfo:
    """``GET /v1/models/{name}``: config, version, counters (and apprentice figures)."""

    name: str
    config: dict[str, Any]
    version: int
    counters: dict[str, Any]
    mode: str = "online"
    apprentice: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelInfo:
        return cls(
            name=str(data["name"]),
            config=dict(data.get("config") or {}),
            version=int(data.get("version", 0)),
            counters=dict(data.get("counters") or {}),
            mode=str(data.get("mode") or "online"),
            apprentice=data.get("apprentice"),
            raw=data,
        )


@dataclass(frozen=True)
class CheckpointResult:
    """One stored checkpoint."""

    sequence: int
    version: int
    created_at: float
    size_bytes: int

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckpointResult:
        return cls(
            int(data["sequence"]),
            int(data["version"]),
            float(data["created_at"]),
            int(data["size_bytes"]),
        )
