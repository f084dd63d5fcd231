"""The checked request bodies the operations take from the fast front.

:mod:`service.edge.serve` builds them from a body ``orjson`` parsed, when the schema
would take it as it stands; the routes take the schema's own models
(:mod:`service.domain.schemas`, :class:`~service.http.routes.ranking.RankCreate`).
Plain slotted classes: no pydantic model per request.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FeedbackBody", "PredictBody", "RankBody"]


class PredictBody:
    """A checked predict body: one ``context`` or a batch of ``contexts``, the defaults."""

    __slots__ = ("context", "contexts", "default_action", "default_actions", "event_ids")
    #: the hot path takes no ``explain`` (such a body goes to the route)
    explain = False

    def __init__(
        self,
        context: list[float] | None,
        contexts: list[list[float]] | None,
        default_action: int | None,
        default_actions: list[int] | None,
        event_ids: list[str] | None = None,
    ) -> None:
        self.context = context
        self.contexts = contexts
        self.default_action = default_action
        self.default_actions = default_actions
        self.event_ids = event_ids

    def defaults(self) -> list[int] | None:
        """The caller's default actions, one per context, or None."""
        if self.default_action is not None:
            return [self.default_action]
        return self.default_actions

    def given_event_ids(self) -> list[str] | None:
        """The caller's event ids (``event_id`` or ``event_ids``), one per context, or None."""
        return self.event_ids


class FeedbackBody:
    """A checked feedback body: the event id and exactly one of loss, reward or losses."""

    __slots__ = ("event_id", "loss", "losses", "reward")

    def __init__(
        self,
        event_id: str,
        loss: float | None,
        reward: float | None,
        losses: tuple[float, float] | None,
    ) -> None:
        self.event_id = event_id
        self.loss = loss
        self.reward = reward
        self.losses = losses


class RankBody:
    """A checked rank body: the context, ``(id, features)`` of each candidate, the
    excluded ids, the caller's event id and whether activation is deferred."""

    __slots__ = ("actions", "context", "defer_activation", "event_id", "excluded_actions")

    def __init__(
        self,
        context: Any,
        actions: list[tuple[str, Any]],
        excluded_actions: list[str],
        event_id: str | None,
        defer_activation: bool,
    ) -> None:
        self.context = context
        self.actions = actions
        self.excluded_actions = excluded_actions
        self.event_id = event_id
        self.defer_activation = defer_activation
