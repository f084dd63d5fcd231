"""Multi-slot ranking in banditree's own API (Personalizer's multi-slot semantics).

* ``POST /v1/models/{name}/rank_multi_slot``: a context, the candidates and 1 to 16
  slots (each with its own features, excluded candidates and an optional baseline
  action); the slots are filled in order without replacement, each by its own decision
  (the slot's features join the context under ``_slot``), stored as
  ``{event_id}#{k}`` for the ``k``-th filled slot.  A slot left with no candidate gets
  ``reward_action_id`` null.
* ``POST .../events/{event_id}/reward_multi_slot``: one reward in [-1, 1] per slot id;
  each slot's decision learns its own (``loss = 1 - reward``).  A deferred event not
  activated is refused (422), as its single-slot feedback is (Personalizer drops those
  rewards instead: its routes do).
* ``POST .../events/{event_id}/activate_multi_slot``: activate every slot of a deferred
  event.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from banditree.ranking import MAX_CANDIDATES
from service.domain.errors import InvalidRequest
from service.domain.operations import ranking_list
from service.domain.registry import ModelRegistry
from service.domain.runtime.ranking import (
    MAX_EVENT_ID_LENGTH,
    MAX_SLOTS,
    Slot,
    activate,
    played_id,
    rank_slots,
    reward_slots,
)
from service.domain.schemas import GivenEventId
from service.http.deps import ModelName
from service.http.routes.ranking import CandidateCreate, Features, RankedAction

router = APIRouter(prefix="/v1/models", tags=["ranking"])
EventId = Annotated[str, Path(min_length=1, max_length=MAX_EVENT_ID_LENGTH)]


class SlotCreate(BaseModel):
    """One slot: its id, features, excluded candidates and baseline action (recorded)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1, max_length=256)
    features: Features | None = None
    excluded_actions: list[str] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    baseline_action: str | None = Field(None, min_length=1, max_length=256)


class MultiSlotRankCreate(BaseModel):
    """Body of ``POST .../rank_multi_slot``."""

    model_config = ConfigDict(extra="forbid")

    context: Features | None = Field(None, description="features of the context")
    actions: list[CandidateCreate] = Field(
        ..., min_length=1, max_length=MAX_CANDIDATES, description="the candidates, unique ids"
    )
    slots: list[SlotCreate] = Field(
        ..., min_length=1, max_length=MAX_SLOTS, description="filled in order, unique ids"
    )
    event_id: GivenEventId | None = Field(
        None,
        description="null: a new id; a rank sent again with the id of one whose slots all "
        "still wait for their reward (a retry) gets the slots as stored",
    )
    defer_activation: StrictBool = Field(
        False, description="no slot is learned from until the event is activated"
    )


class SlotPublic(BaseModel):
    """One slot's answer: its played candidate (null: none was left) and ranking."""

    id: str
    reward_action_id: str | None
    ranking: list[RankedAction]


class MultiSlotRankPublic(BaseModel):
    event_id: str
    model_version: int
    slots: list[SlotPublic]
    logged: bool = True


class SlotReward(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot_id: str = Field(..., min_length=1, max_length=256)
    reward: float = Field(..., ge=-1.0, le=1.0, allow_inf_nan=False)


class MultiSlotRewardCreate(BaseModel):
    """Body of ``POST .../events/{event_id}/reward_multi_slot``."""

    model_config = ConfigDict(extra="forbid")

    rewards: list[SlotReward] = Field(..., min_length=1, max_length=MAX_SLOTS)


class MultiSlotRewardPublic(BaseModel):
    event_id: str
    rewarded: int = Field(description="slots whose reward was taken")


class MultiSlotActivatePublic(BaseModel):
    event_id: str
    activated: int = Field(description="slot decisions made learnable (0: already were)")


@router.post("/{name}/rank_multi_slot", responses={200: {"model": MultiSlotRankPublic}})
async def rank_multi_slot_route(
    name: ModelName, body: MultiSlotRankCreate, request: Request
) -> Response:
    """Fill 1 to 16 slots from 1 to 256 candidates, without replacement."""
    registry: ModelRegistry = request.app.state.registry
    runtime = await registry.get(name)
    slots = [
        Slot(s.id, s.features, tuple(s.excluded_actions), s.baseline_action) for s in body.slots
    ]
    event_id, filled, logged = await rank_slots(
        runtime, body.context, [(a.id, a.features) for a in body.actions], slots,
        event_id=body.event_id, defer=body.defer_activation,
    )  # fmt: skip
    answer: list[dict[str, Any]] = []
    version = runtime.learner.version
    for slot_id, d in filled:
        chosen = played_id(d)
        if d is None or chosen is None:
            answer.append({"id": slot_id, "reward_action_id": None, "ranking": []})
            continue
        version = d.model_version
        answer.append({"id": slot_id, "reward_action_id": chosen, "ranking": ranking_list(d)})
    content: dict[str, Any] = {"event_id": event_id, "model_version": version, "slots": answer}
    if not logged:
        content["logged"] = False
    return Response(orjson.dumps(content), media_type="application/json")


@router.post("/{name}/events/{event_id}/reward_multi_slot")
async def reward_multi_slot_route(
    name: ModelName, event_id: EventId, body: MultiSlotRewardCreate, request: Request
) -> MultiSlotRewardPublic:
    """One reward per slot id of a multi-slot event; each slot's decision learns its own."""
    registry: ModelRegistry = request.app.state.registry
    runtime = await registry.get(name)
    if len({r.slot_id for r in body.rewards}) != len(body.rewards):
        raise InvalidRequest("rewards: one reward per slot id", "rewards")
    await reward_slots(
        runtime, event_id, [(r.slot_id, r.reward) for r in body.rewards],
        slot_field="rewards[{k}].slot_id",
    )  # fmt: skip
    return MultiSlotRewardPublic(event_id=event_id, rewarded=len(body.rewards))


@router.post("/{name}/events/{event_id}/activate_multi_slot")
async def activate_multi_slot_route(
    name: ModelName, event_id: EventId, request: Request
) -> MultiSlotActivatePublic:
    """Activate every slot of a deferred multi-slot event."""
    registry: ModelRegistry = request.app.state.registry
    runtime = await registry.get(name)
    activated = await activate(runtime, event_id, multislot=True)
    return MultiSlotActivatePublic(event_id=event_id, activated=activated)
