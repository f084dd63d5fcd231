"""Decisions under event ids the caller gives (Personalizer's ``eventId``): retries are
answered, not decided again.

A client that retries a predict (after a timeout, or a 503 from a proxy) cannot tell
whether the service made and stored the first decision; with event ids of its own in
the body, the retry gets the decisions stored the first time, counted once.  Each id is
looked up first (:meth:`~service.store.DecisionStore.peek_events`): a decision of this
model still waiting for its feedback is answered as stored; an id already settled (its
feedback taken, or its reward wait over) is refused with 409, since its decision can
no longer be given; only the other ids are decided, under those ids.  Requests of this
process deciding the same ids at once share one decision (a retry that overtakes the
first attempt).

The new decisions are stored only if their ids are still free
(:meth:`~service.store.DecisionStore.put_new_events`, one atomic step in the store):
when another process (or a rank of this one) stored a decision under one of them
meanwhile, that stored decision is the answer and this one is dropped, so two
processes deciding one id at the same moment answer the same decision and count it
once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

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

T = TypeVar("T")


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
        if lookup.status != "unknown":
            rows[i] = _stored_public(runtime, lookup, event_ids[i], _field(event_ids, single, i))
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
                [_field(event_ids, single, i) for i in new],
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


def _stored_public(
    runtime: ModelRuntime, lookup: EventLookup, event_id: str, field: str
) -> dict[str, Any]:
    """The public answer of the decision stored under ``event_id``; 409 when it is
    settled, or a decision of an earlier model of this name."""
    decision = None
    if lookup.status == "pending" and lookup.payload is not None:
        decision = read_decision(lookup.payload, runtime.uid)
    if decision is None:
        raise EventIdSettled(event_id, field)
    return decision_public(decision)


async def _decide(
    runtime: ModelRuntime,
    contexts: list[Any],
    event_ids: list[str],
    defaults: list[int] | None,
    started: float,
    fields: list[str],
) -> tuple[list[dict[str, Any]], bool]:
    learner = runtime.learner
    if len(contexts) == 1:
        decision = act_one(
            learner, contexts[0], None if defaults is None else defaults[0], event_ids[0]
        )
        payloads = [decision_payload(runtime.uid, decision)]
        publics, explored = [decision_public(decision)], [int(decision.explored)]
        leaves: list[float | None] = [decision.extras.get("reachable_leaves")]
    else:
        apprentice = learner.apprentice
        if defaults is not None and apprentice is not None:
            columns = apprentice.act_columns(contexts, event_ids, default_actions=defaults)
        else:
            columns = learner.act_columns(contexts, event_ids)
        payloads = list(column_payloads(runtime.uid, columns))
        publics, explored = columns_public(columns), [int(e) for e in columns.explored]
        reachable = (columns.extras or {}).get("reachable_leaves") or []
        leaves = list(reachable) if len(reachable) == len(contexts) else [None] * len(contexts)
    return await store_new(
        runtime, event_ids, payloads, publics, started, explored=explored, leaves=leaves,
        stored_answer=lambda k, lookup: _stored_public(runtime, lookup, event_ids[k], fields[k]),
    )  # fmt: skip


async def store_new(
    runtime: ModelRuntime,
    event_ids: list[str],
    payloads: list[str],
    publics: list[T],
    started: float,
    *,
    explored: list[int],
    leaves: list[float | None],
    stored_answer: Callable[[int, EventLookup], T],
    whole: bool = False,
) -> tuple[list[T], bool]:
    """Store the decisions made under ``event_ids`` (answered ``publics``) where the ids
    are still free, and count those: ``(answers, logged)``; the ``k``-th id, stored by
    another request meanwhile, is answered ``stored_answer(k, what it holds)`` (which
    refuses a settled one).  ``whole``: the decisions go together (the slots of one
    multi-slot rank): when one id is taken, none is stored and the answers are ``[]``."""
    answers = list(publics)
    todo = list(range(len(event_ids)))
    stored: list[int] = []
    while todo:  # each round settles at least one id, or stores every one left
        try:
            found = await runtime.store.put_new_events(
                runtime.name, [(event_ids[k], payloads[k]) for k in todo], now=time.time(),
                ttl_seconds=runtime.policy.event_ttl_seconds,
            )  # fmt: skip
        except StoreUnavailable as err:  # answered as decided: nothing is logged
            runtime.answered_unlogged(len(todo), err)
            runtime.count_stored(0, len(todo), started)
            return answers, False
        if not found:
            stored += todo
            break
        if whole:
            return [], True
        free = []
        for k, lookup in zip(todo, found, strict=True):
            if lookup.status == "unknown":
                free.append(k)
            else:
                answers[k] = stored_answer(k, lookup)
        todo = free
    runtime.count_stored(len(stored), len(stored), started)
    runtime.count_decided(
        sum(explored[k] for k in stored),
        [leaf for k in stored if (leaf := leaves[k]) is not None],
    )
    return answers, True
