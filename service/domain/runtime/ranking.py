"""Ranking on a served model: rank (one slot or several), activate a deferred event.

A ranking decision is stored as a pending decision like a prediction (its record holds
the whole candidate set), so feedback, expiry, the log and replay treat it as any other.
A multi-slot rank stores one decision per filled slot, under ``{event_id}#{i}`` for the
``i``-th filled slot; each slot's record names the filled slots in order, so a reward
by slot id and an activation find them.  Activation rewrites a deferred decision as
active (a fresh deadline); a deferred decision is refused feedback until then, and one
never activated expires without being learned.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from banditree.core import Decision, Feedback
from banditree.core.codec import decision_payload, read_decision
from banditree.features import InvalidInput
from banditree.ranking import RankingModel, as_features
from service.domain.errors import (
    FEEDBACK_REFUSALS,
    Conflict,
    InvalidRequest,
    NotFound,
    Unavailable,
)
from service.domain.runtime.api import ModelRuntime, new_event_ids
from service.domain.runtime.given_ids import store_new
from service.domain.schemas import GIVEN_EVENT_ID_RULE, MAX_GIVEN_EVENT_ID, given_event_id_ok
from service.store import EventLookup, StoreUnavailable

#: most slots of one multi-slot rank
MAX_SLOTS = 16
#: longest event id a caller may give (a multi-slot suffix ``#i`` comes on top)
MAX_EVENT_ID_LENGTH = MAX_GIVEN_EVENT_ID


def played_id(decision: Decision | None) -> str | None:
    """The id of the candidate a ranking decision played (None: no decision, as for a
    slot left with no candidate)."""
    if decision is None or decision.ranking is None or decision.action is None:
        return None
    return str(decision.ranking["ids"][decision.action])


class EventIdTaken(Conflict):
    """A rank named an event id that is already used."""

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event_id {event_id!r} is already used by this model", "event_id")


@dataclass(frozen=True)
class Slot:
    """One slot of a multi-slot rank: its id, features (added to the context under
    ``_slot``), excluded candidates and baseline action (recorded)."""

    id: str
    features: Any = None
    excluded: Sequence[str] = ()
    baseline: str | None = None


def ranking_model(runtime: ModelRuntime) -> RankingModel:
    """The served ranking model of ``runtime``; 422 for a model of another task."""
    learner = runtime.learner
    if not isinstance(learner, RankingModel):
        raise InvalidRequest(
            f"model {runtime.name!r} is a {learner.task} model: rank needs a model created "
            "with task ranking",
            "name",
        )
    return learner


def slot_event_id(event_id: str, index: int) -> str:
    """The stored event id of the ``index``-th filled slot of a multi-slot rank."""
    return f"{event_id}#{index}"


def _checked(event_id: str) -> str:
    """``event_id`` when a caller may give it, else 422 naming the field and the rule."""
    if not given_event_id_ok(event_id):
        raise InvalidRequest(f"event_id: {GIVEN_EVENT_ID_RULE}", "event_id")
    return event_id


async def _stored_ranking(runtime: ModelRuntime, event_id: str) -> Decision | None:
    """The ranking decision stored under the caller's ``event_id`` and still waiting for
    its reward (a rank sent again: answered as stored), None when the id is new; 409 when
    its decision was settled (rewarded, or its reward wait over)."""
    found = await _peek(runtime, _checked(event_id))
    if found.status == "unknown":
        return None
    return _ranking_of(runtime, found, event_id)


def _ranking_of(runtime: ModelRuntime, found: EventLookup, event_id: str) -> Decision:
    """The pending ranking decision ``found`` under ``event_id``; 409 when it is settled
    or not a ranking of this model."""
    decision = None
    if found.status == "pending" and found.payload is not None:
        decision = read_decision(found.payload, runtime.uid)
    if decision is None or decision.ranking is None:
        raise EventIdTaken(event_id)
    return decision


async def _stored_slots(
    runtime: ModelRuntime, event_id: str, slots: Sequence[Slot]
) -> list[tuple[str, Decision | None]] | None:
    """The answer of the multi-slot rank stored under the caller's ``event_id`` while
    every filled slot still waits for its reward (a rank sent again: answered as stored),
    in the order of ``slots``; None when the id is new; 409 when a slot was settled
    (rewarded, or its reward wait over: its decision is no longer kept) or the stored
    rank filled a slot ``slots`` does not name."""
    first = _ranking_of_slot(runtime, await _peek(runtime, slot_event_id(event_id, 0)), event_id)
    if first is None:
        return None
    assert first.ranking is not None
    names = list(first.ranking.get("slots") or [first.ranking.get("slot")])
    rest = [slot_event_id(event_id, k) for k in range(1, len(names))]
    try:
        found = await runtime.store.peek_events(runtime.name, rest, now=time.time())
    except StoreUnavailable as err:
        raise Unavailable(f"the store is unreachable: {err}") from None
    by_slot = {names[0]: first}
    for name, lookup in zip(names[1:], found, strict=True):
        decision = _ranking_of_slot(runtime, lookup, event_id)
        if decision is None:
            raise EventIdTaken(event_id)
        by_slot[name] = decision
    if not set(by_slot) <= {slot.id for slot in slots}:
        raise EventIdTaken(event_id)
    return [(slot.id, by_slot.get(slot.id)) for slot in slots]


def _ranking_of_slot(runtime: ModelRuntime, found: EventLookup, event_id: str) -> Decision | None:
    """:func:`_ranking_of` of one slot of a multi-slot rank; None when the slot's id is free."""
    if found.status == "unknown":
        return None
    return _ranking_of(runtime, found, event_id)


async def _peek(runtime: ModelRuntime, event_id: str) -> Any:
    try:
        return await runtime.store.peek_event(runtime.name, event_id, now=time.time())
    except StoreUnavailable as err:
        raise Unavailable(f"the store is unreachable: {err}") from None


async def _store(runtime: ModelRuntime, decisions: list[Decision], started: float) -> bool:
    events = [(d.event_id, decision_payload(runtime.uid, d)) for d in decisions]
    return await runtime._store(events, sum(d.explored for d in decisions), [], started)


async def rank(
    runtime: ModelRuntime,
    context: Any,
    actions: Sequence[tuple[str, Any]],
    *,
    excluded: Sequence[str] = (),
    event_id: str | None = None,
    defer: bool = False,
) -> tuple[Decision, bool]:
    """Rank ``actions`` for ``context`` and store the decision: ``(decision, logged)``.

    A rank under an ``event_id`` already decided and still waiting for its reward (a
    retry) is answered with the stored decision, not decided nor counted again
    (Personalizer's ``eventId``)."""
    started = time.perf_counter()
    model = ranking_model(runtime)
    if event_id is None:
        decision = model.rank(context, actions, new_event_ids(1)[0], excluded=excluded,
                              active=not defer)  # fmt: skip
        return decision, await _store(runtime, [decision], started)
    stored = await _stored_ranking(runtime, event_id)
    if stored is not None:
        return stored, True
    decision = model.rank(context, actions, event_id, excluded=excluded, active=not defer)
    answers, logged = await store_new(
        runtime, [event_id], [decision_payload(runtime.uid, decision)], [decision], started,
        explored=[int(decision.explored)], leaves=[None],
        stored_answer=lambda _, found: _ranking_of(runtime, found, event_id),
    )  # fmt: skip
    return answers[0], logged


async def rank_slots(
    runtime: ModelRuntime,
    context: Any,
    actions: Sequence[tuple[str, Any]],
    slots: Sequence[Slot],
    *,
    event_id: str | None = None,
    defer: bool = False,
) -> tuple[str, list[tuple[str, Decision | None]], bool]:
    """Fill ``slots`` in order without replacement: ``(event_id, [(slot id, decision or
    None when no candidate is left)], logged)``."""
    started = time.perf_counter()
    model = ranking_model(runtime)
    if not 1 <= len(slots) <= MAX_SLOTS:
        raise InvalidRequest(f"slots: 1 to {MAX_SLOTS} slots, got {len(slots)}", "slots")
    ids = [s.id for s in slots]
    if len(set(ids)) != len(ids) or not all(isinstance(i, str) and i for i in ids):
        raise InvalidRequest("slots: slot ids must be unique non-empty strings", "slots")
    if event_id is not None:
        answered = await _stored_slots(runtime, _checked(event_id), slots)
        if answered is not None:  # sent again: answered as stored
            return event_id, answered, True
    eid = event_id if event_id is not None else new_event_ids(1)[0]
    base = dict(as_features(context, "context"))
    taken: list[str] = []
    out: list[tuple[str, Decision | None]] = []
    filled: list[Decision] = []
    for k, slot in enumerate(slots):
        excluded = {*taken, *slot.excluded}
        if all(a[0] in excluded for a in actions) and actions:
            out.append((slot.id, None))
            continue
        slot_context = {**base, "_slot": as_features(slot.features, f"slots[{k}].features")}
        try:
            decision = model.rank(
                slot_context, actions, slot_event_id(eid, len(filled)),
                excluded=sorted(excluded), active=not defer, slot=slot.id,
                baseline=slot.baseline,
            )  # fmt: skip
        except InvalidInput as err:
            field = err.field if err.field != "excluded_actions" else f"slots[{k}].excludedActions"
            raise InvalidInput(field, str(err).split(": ", 1)[-1]) from None
        assert decision.action is not None and decision.ranking is not None
        if slot.baseline is not None:
            decision.ranking["baseline"] = slot.baseline
        taken.append(decision.ranking["ids"][decision.action])
        filled.append(decision)
        out.append((slot.id, decision))
    names = [d.ranking["slot"] for d in filled if d.ranking is not None]
    for d in filled:
        assert d.ranking is not None
        d.ranking["slots"] = names
    if event_id is None or not filled:
        return eid, out, await _store(runtime, filled, started)
    stored, logged = await store_new(
        runtime, [d.event_id for d in filled], [decision_payload(runtime.uid, d) for d in filled],
        filled, started, explored=[int(d.explored) for d in filled], leaves=[None] * len(filled),
        stored_answer=lambda _, found: _ranking_of(runtime, found, event_id), whole=True,
    )  # fmt: skip
    if not stored:  # the same rank stored by another request meanwhile: its answer
        answered = await _stored_slots(runtime, event_id, slots)
        if answered is None:
            raise EventIdTaken(event_id)
        return event_id, answered, True
    return eid, out, logged


async def _slot_events(runtime: ModelRuntime, event_id: str) -> list[str]:
    """The stored event ids of a multi-slot event, in slot order, read from the record of
    its first slot still pending (404 when there is none; a refusal of the feedback kind
    when every slot was rewarded or expired)."""
    first_refusal: str | None = None
    for i in range(MAX_SLOTS):
        found = await _peek(runtime, slot_event_id(event_id, i))
        if found.status == "unknown":
            break
        if found.status != "pending" or found.payload is None:
            first_refusal = first_refusal or found.status
            continue
        decision = read_decision(found.payload, runtime.uid)
        if decision is None or decision.ranking is None:
            break
        return [slot_event_id(event_id, k) for k in range(len(decision.ranking.get("slots", [])))]
    if first_refusal is not None:
        raise FEEDBACK_REFUSALS.get(first_refusal, FEEDBACK_REFUSALS["unknown"])(event_id)
    raise NotFound(f"event_id {event_id!r} is not a multi-slot event of this model", "event_id")


async def _slot_names(runtime: ModelRuntime, event_id: str) -> dict[str, str]:
    """Slot id -> stored event id of a multi-slot event."""
    stored = await _slot_events(runtime, event_id)
    for eid in stored:
        found = await _peek(runtime, eid)
        decision = read_decision(found.payload, runtime.uid) if found.payload else None
        if decision is not None and decision.ranking is not None:
            names = decision.ranking.get("slots", [])
            return {name: stored[i] for i, name in enumerate(names)}
    return {}


async def activate(runtime: ModelRuntime, event_id: str, *, multislot: bool = False) -> int:
    """Make a deferred event (every slot of a multi-slot one) learnable: the events activated.

    An event already active (or already rewarded) is left as it is; an unknown one is
    404, an expired one 410.
    """
    ranking_model(runtime)
    stored = await _slot_events(runtime, event_id) if multislot else [event_id]
    now, activated = time.time(), []
    for eid in stored:
        found = await _peek(runtime, eid)
        if found.status == "duplicate":
            continue  # rewarded after an earlier activation
        if found.status != "pending" or found.payload is None:
            raise FEEDBACK_REFUSALS.get(found.status, FEEDBACK_REFUSALS["unknown"])(event_id)
        decision = read_decision(found.payload, runtime.uid)
        if decision is None or decision.ranking is None:
            raise FEEDBACK_REFUSALS["unknown"](event_id)
        if decision.ranking.get("active", True):
            continue
        ranking = {k: v for k, v in decision.ranking.items() if k != "active"}
        activated.append(dataclasses.replace(decision, ranking=ranking))
    if activated:
        events = [(d.event_id, decision_payload(runtime.uid, d)) for d in activated]
        try:
            await runtime.store.put_events(
                runtime.name, events, now=now, ttl_seconds=runtime.policy.event_ttl_seconds,
                counted=False,  # rewritten in place: counted once, when ranked
            )  # fmt: skip
        except StoreUnavailable as err:
            raise Unavailable(f"the store is unreachable: {err}") from None
    return len(activated)


async def reward_slots(
    runtime: ModelRuntime,
    event_id: str,
    rewards: Sequence[tuple[str, float]],
    *,
    ignore_inactive: bool = False,
    slot_field: str = "reward[{k}].slotId",
) -> None:
    """One reward per slot id of a multi-slot event (each slot's decision takes its own);
    ``ignore_inactive``: the rewards of a deferred event not activated are dropped
    (Personalizer's rule) rather than refused; ``slot_field``: how a refusal names the
    ``k``-th slot id."""
    ranking_model(runtime)
    by_slot = await _slot_names(runtime, event_id)
    for k, (slot_id, _) in enumerate(rewards):
        if slot_id not in by_slot:
            field = slot_field.format(k=k)
            raise InvalidRequest(
                f"{field}: {slot_id!r} is not a filled slot of event {event_id!r}", field
            )
    for slot_id, value in rewards:
        feedback = reward_feedback(value)
        if ignore_inactive and await is_inactive(runtime, by_slot[slot_id]):
            continue
        await runtime.feedback(by_slot[slot_id], feedback, field="reward")


def reward_feedback(value: float) -> Feedback:
    """The feedback of a ranking reward (``loss = 1 - reward``; a reward is in [-1, 1])."""
    if not -1.0 <= value <= 1.0:
        raise InvalidRequest(f"value: a reward must be in [-1, 1], got {value}", "value")
    return Feedback(loss=1.0 - value)


async def is_inactive(runtime: ModelRuntime, event_id: str) -> bool:
    """Whether ``event_id`` is a pending deferred decision not yet activated."""
    found = await _peek(runtime, event_id)
    if found.status != "pending" or found.payload is None:
        return False
    decision = read_decision(found.payload, runtime.uid)
    return bool(decision and decision.ranking and not decision.ranking.get("active", True))
