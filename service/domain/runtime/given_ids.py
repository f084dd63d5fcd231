"""Decisions under event ids the caller gives (Personalizer's ``eventId``): retries are
answered, not decided again.

A client that retries a predict (after a timeout, or a 503 from a proxy) cannot tell
whether the service made and stored the first decision; with event ids of its own in
the body, the retry gets the decisions stored the first time, counted once.  Each id is
looked up first (:meth:`~service.store.DecisionStore.peek_events`): a decision of this
model still waiting for its feedback is answered as stored; an id already settled (its
feedback taken, or its reward wait over) is refused with 409, since its decision can
no longer be given; only the other ids are decided, under those ids, and stored (and
counted).  Requests of this process deciding the same ids at once share one decision
(a retry that overtakes the first attempt).  Two processes deciding one id at the same
moment may each store a decision (the later write wins, both are counted): the stores
write decisions without a check.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from banditree.core.codec import (
    column_payloads,
    columns_public,
    decision_payload,
    decision_public,
    read_decision,
)
from service.domain.errors import Conflict, InvalidRequest
from service.domain.runtime.api import act_one
from service.store import EventLookup, StoreUnavailable

if TYPE_CHECKING:
    from service.domain.runtime.api import ModelRuntime


class EventIdSettled(Conflict):
    """409: the decision of this event id was already settled (feedback or expiry)."""

    def __init__(self, event_id: str, field: str) -> None:
        super().__init__(
            f"event_id {event_id!r} is already used by this model and settled (its feedback "
            "was taken or its reward wait is over): send a new one",
            field,
        )


def _field(event_ids: list[str], single: bool, i: int) -> str:
    return "event_id" if single else f"event_ids[{i}]"


async def predict_given(
    runtime: ModelRuntime,
    contexts: list[Any],
    event_ids: list[str],
    defaults: list[int] | None,
    *,
    single: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """Decide ``contexts`` under ``event_ids`` (one each), answering the ids already
    decided with their stored decisions: ``(public answers in order, logged)``."""
    started = time.perf_counter()
    n = len(contexts)
    if len(set(event_ids)) != n:
        raise InvalidRequest("event_ids must be distinct", "event_ids")
    try:
        found = await runtime.store.peek_events(runtime.name, event_ids, now=time.time())
    except StoreUnavailable:  # decided afresh: the write tells whether it is logged
        found = [EventLookup("unknown")] * n
    rows: list[dict[str, Any] | None] = [None] * n
    for i, lookup in enumerate(found):
        if lookup.status == "unknown":
            continue
        decision = None
        if lookup.status == "pending" and lookup.payload is not None:
            decision = read_decision(lookup.payload, runtime.uid)
        if decision is None:  # settled, or a decision of an earlier model of this name
            raise EventIdSettled(event_ids[i], _field(event_ids, single, i))
        rows[i] = decision_public(decision)
    in_flight = runtime.given_in_flight
    waits = {
        i: in_flight[event_ids[i]]
        for i in range(n)
        if rows[i] is None and event_ids[i] in in_flight
    }
    new = [i for i in range(n) if rows[i] is None and i not in waits]
    logged = True
    if new:
        loop = asyncio.get_running_loop()
        mine = {event_ids[i]: loop.create_future() for i in new}
        in_flight.update(mine)
        try:
            publics, logged = await _decide(
                runtime,
                [contexts[i] for i in new],
                [event_ids[i] for i in new],
                None if defaults is None else [defaults[i] for i in new],
                started,
            )
            for i, public in zip(new, publics, strict=True):
                rows[i] = public
                mine[event_ids[i]].set_result(public)
        except BaseException as err:
            for future in mine.values():
                if not future.done():
                    future.set_exception(err)
                    future.exception()  # retrieved: the waiters get it too
            raise
        finally:
            for event_id in mine:
                in_flight.pop(event_id, None)
    for i, future in waits.items():
        rows[i] = await future
    return [row for row in rows if row is not None], logged


async def _decide(
    runtime: ModelRuntime,
    contexts: list[Any],
    event_ids: list[str],
    defaults: list[int] | None,
    started: float,
) -> tuple[list[dict[str, Any]], bool]:
    learner = runtime.learner
    if len(contexts) == 1:
        decision = act_one(
            learner, contexts[0], None if defaults is None else defaults[0], event_ids[0]
        )
        events = [(decision.event_id, decision_payload(runtime.uid, decision))]
        leaves = (
            [decision.extras["reachable_leaves"]] if "reachable_leaves" in decision.extras else []
        )
        logged = await runtime._store(events, int(decision.explored), leaves, started)
        return [decision_public(decision)], logged
    apprentice = learner.apprentice
    if defaults is not None and apprentice is not None:
        columns = apprentice.act_columns(contexts, event_ids, default_actions=defaults)
    else:
        columns = learner.act_columns(contexts, event_ids)
    events = list(zip(columns.event_ids, column_payloads(runtime.uid, columns), strict=True))
    leaves = (columns.extras or {}).get("reachable_leaves") or []
    logged = await runtime._store(events, sum(columns.explored), leaves, started)
    return columns_public(columns), logged
