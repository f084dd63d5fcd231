"""The resolved service settings of one model (its own, else the server's)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """Resolved per-model service settings."""

    checkpoint_every_updates: int
    checkpoint_every_seconds: float
    event_ttl_seconds: float
    default_loss: float | None
    checkpoint_keep: int
