"""What the two clients share: request bodies, answer parsing and the retry policy."""

from __future__ import annotations

import math
import random
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from banditree.client.errors import BanditreeError
from banditree.client.results import FeedbackResult

#: statuses worth retrying: the service (or its store) is briefly unavailable
RETRY_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Retry on 503 (and 502/504) and on connection errors, with exponential backoff.

    Attempt ``k`` (0-based) waits ``min(max_backoff_seconds, backoff_seconds * 2**k)``
    times a random factor in ``[0.5, 1]`` before the next try.
    """

    attempts: int = 4
    backoff_seconds: float = 0.1
    max_backoff_seconds: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not (math.isfinite(self.backoff_seconds) and self.backoff_seconds >= 0):
            raise ValueError(f"backoff_seconds must be >= 0, got {self.backoff_seconds}")

    def delay_seconds(self, attempt: int) -> float:
        base = min(self.max_backoff_seconds, self.backoff_seconds * (2**attempt))
        return base * (0.5 + 0.5 * random.random())


def model_path(name: str, suffix: str = "") -> str:
    return f"/v1/models/{quote(name, safe='')}{suffix}"


def http_options(
    base_url: str, api_key: str | None, timeout_seconds: float, max_connections: int
) -> dict[str, Any]:
    """The keyword arguments of ``httpx.Client`` and ``httpx.AsyncClient`` alike."""
    return {
        "base_url": base_url.rstrip("/"),
        "headers": headers(api_key),
        "timeout": timeout_seconds,
        "limits": httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
    }


def headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def raise_for_answer(response: httpx.Response) -> None:
    """Raise :class:`BanditreeError` with the service's detail and field on a non-2xx."""
    if response.is_success:
        return
    detail, field = response.text[:500], None
    try:
        body = response.json()
        if isinstance(body, dict):
            detail, field = str(body.get("detail", detail)), body.get("field")
    except ValueError:
        pass
    raise BanditreeError(response.status_code, detail, field)


def context_body(context: Any) -> Any:
    """A context on the wire: an object of named features as it is (a model with a
    feature schema), anything else as a list of floats."""
    if isinstance(context, Mapping):
        return dict(context)
    return [float(v) for v in context]


def new_event_ids(count: int) -> list[str]:
    """``count`` fresh event ids of the service's own form: the time in milliseconds (12
    hex digits) then 96 random bits (24), so that the ids a client makes are neighbours
    in the store's index as the service's own are."""
    stamp = f"{time.time_ns() // 1_000_000:012x}"
    return [stamp + secrets.token_hex(12) for _ in range(count)]


def predict_body(
    context: Any | None,
    contexts: Sequence[Any] | None,
    default_action: int | None,
    default_actions: list[int] | None,
    event_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Body of ``POST .../predict``: one ``context`` (its ``event_id``) or a batch of
    ``contexts`` (their ``event_ids``).  Without ``event_ids`` fresh ones are made, so
    that every retry of this body names the same decisions: the service answers a
    repeat with the decisions it stored the first time and counts them once."""
    body: dict[str, Any] = {}
    if context is not None:
        body["context"] = context_body(context)
        (body["event_id"],) = event_ids if event_ids is not None else new_event_ids(1)
    if contexts is not None:
        body["contexts"] = [context_body(c) for c in contexts]
        ids = list(event_ids) if event_ids is not None else new_event_ids(len(contexts))
        if len(ids) != len(contexts):
            raise ValueError(f"{len(ids)} event_ids for {len(contexts)} contexts")
        body["event_ids"] = ids
    if default_action is not None:
        body["default_action"] = int(default_action)
    if default_actions is not None:
        body["default_actions"] = [int(a) for a in default_actions]
    return body


def feedback_body(
    event_id: str, loss: float | None, reward: float | None, losses: tuple[float, float] | None
) -> dict[str, Any]:
    given = [
        k for k, v in (("loss", loss), ("reward", reward), ("losses", losses)) if v is not None
    ]
    if len(given) != 1:
        raise ValueError(f"give exactly one of loss, reward or losses, got {given}")
    body: dict[str, Any] = {"event_id": event_id}
    if loss is not None:
        body["loss"] = float(loss)
    elif reward is not None:
        body["reward"] = float(reward)
    elif losses is not None:
        body["losses"] = [float(losses[0]), float(losses[1])]
    return body


def rank_body(
    context: Any,
    actions: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    excluded_actions: Sequence[str] | None,
    event_id: str | None,
    defer_activation: bool,
) -> dict[str, Any]:
    """Body of ``POST .../rank``; ``actions`` as ``[{id, features}]`` or ``{id: features}``."""
    if isinstance(actions, Mapping):
        listed = [{"id": key, "features": value} for key, value in actions.items()]
    else:
        listed = [dict(a) for a in actions]
    body: dict[str, Any] = {"actions": listed}
    if context is not None:
        body["context"] = context
    if excluded_actions:
        body["excluded_actions"] = list(excluded_actions)
    # a fresh id when none is given: every retry of this body names the same decision
    body["event_id"] = event_id if event_id is not None else new_event_ids(1)[0]
    if defer_activation:
        body["defer_activation"] = True
    return body


def multi_slot_body(
    context: Any,
    actions: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    slots: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    event_id: str | None,
    defer_activation: bool,
) -> dict[str, Any]:
    """Body of ``POST .../rank_multi_slot``; ``slots`` as ``[{id, features,
    excluded_actions, baseline_action}]`` or ``{slot id: features}``."""
    body = rank_body(context, actions, None, event_id, defer_activation)
    if isinstance(slots, Mapping):
        body["slots"] = [{"id": key, "features": value} for key, value in slots.items()]
    else:
        body["slots"] = [dict(s) for s in slots]
    return body


def multi_slot_rewards_body(rewards: Mapping[str, float]) -> dict[str, Any]:
    """Body of ``POST .../events/{id}/reward_multi_slot``: one reward per slot id."""
    return {"rewards": [{"slot_id": k, "reward": float(v)} for k, v in rewards.items()]}


def log_page_params(since: int | None, until: int | None, page_rows: int) -> dict[str, Any]:
    """Query of one page of ``GET /v1/models/{name}/log``."""
    params: dict[str, Any] = {"limit": page_rows}
    if since is not None:
        params["since"] = since
    if until is not None:
        params["until"] = until
    return params


def feedback_result(response: httpx.Response, event_id: str) -> FeedbackResult:
    """2xx: accepted; 409: the service already holds this event's feedback."""
    if response.status_code == 409:
        return FeedbackResult(event_id, "already_accepted")
    raise_for_answer(response)
    return FeedbackResult(event_id, "accepted")
