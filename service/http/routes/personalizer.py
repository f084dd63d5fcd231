"""Azure Personalizer's rank and reward API under ``/v1/models/{name}/personalizer/``.

With the endpoint ``{server}/v1/models/{name}``, Personalizer's own clients work
unchanged: ``rank``, ``events/{eventId}/reward``, ``events/{eventId}/activate`` and their
``multislot/`` forms, Personalizer's field names, statuses (201 for a rank, 204 for a
reward or an activation) and error body ``{"error": {"code", "message"}}``; any
``api-version`` query is accepted, the key in ``Ocp-Apim-Subscription-Key`` as well as
``Authorization: Bearer`` (:mod:`service.edge.app`).  The model is a banditree ranking
model (``{"task": "ranking"}``); ``docs/how-to/migrate-from-personalizer.md`` gives the
semantic mapping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError
from pydantic.json_schema import models_json_schema

from banditree.features import InvalidInput
from banditree.ranking import MAX_CANDIDATES
from service.domain.errors import DomainError
from service.domain.operations import ranking_list
from service.domain.registry import ModelRegistry
from service.domain.runtime.api import ModelRuntime
from service.domain.runtime.ranking import (
    MAX_EVENT_ID_LENGTH,
    MAX_SLOTS,
    Slot,
    activate,
    is_inactive,
    played_id,
    rank,
    rank_slots,
    reward_feedback,
    reward_slots,
)
from service.domain.schemas import GivenEventId
from service.http.deps import ModelName
from service.http.errors import STORE_ERRORS, domain_status
from service.http.personalizer_errors import personalizer_error

#: in the OpenAPI document with Personalizer's field names, statuses and error body
#: (:mod:`service.http.personalizer_errors`); the bodies are parsed here, not by FastAPI, so a
#: bad one gets Personalizer's 400 (:func:`request_body` describes them)
router = APIRouter(prefix="/v1/models/{name}/personalizer", tags=["personalizer"])

Features = list[dict[str, Any]] | dict[str, Any] | None
EventId = Annotated[str, Path(min_length=1, max_length=MAX_EVENT_ID_LENGTH)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class PzAction(_Body):
    id: str = Field(..., min_length=1, max_length=256)
    features: Features = None


class PzRank(_Body):
    contextFeatures: Features = None
    actions: list[PzAction] = Field(..., min_length=1, max_length=MAX_CANDIDATES)
    excludedActions: list[str] | None = Field(None, max_length=MAX_CANDIDATES)
    eventId: GivenEventId | None = None
    deferActivation: StrictBool | None = None


class PzSlot(_Body):
    id: str = Field(..., min_length=1, max_length=256)
    features: Features = None
    excludedActions: list[str] | None = Field(None, max_length=MAX_CANDIDATES)
    baselineAction: str | None = None


class PzMultiRank(PzRank):
    slots: list[PzSlot] = Field(..., min_length=1, max_length=MAX_SLOTS)


class PzReward(_Body):
    value: float = Field(..., ge=-1.0, le=1.0, allow_inf_nan=False)


class PzSlotReward(_Body):
    slotId: str = Field(..., min_length=1)
    value: float = Field(..., ge=-1.0, le=1.0, allow_inf_nan=False)


class PzMultiReward(_Body):
    reward: list[PzSlotReward] = Field(..., min_length=1, max_length=MAX_SLOTS)


class PzRanked(BaseModel):
    """One candidate of a rank answer and the probability it was played with."""

    id: str
    probability: float


class PzRankAnswer(BaseModel):
    """Personalizer Rank's answer: the played candidate first (``rewardActionId``)."""

    ranking: list[PzRanked]
    eventId: str
    rewardActionId: str | None


class PzSlotAnswer(BaseModel):
    """One slot of a multi-slot rank: the candidate it plays (null: none was left)."""

    id: str
    rewardActionId: str | None


class PzMultiRankAnswer(BaseModel):
    """Personalizer multi-slot Rank's answer."""

    eventId: str
    slots: list[PzSlotAnswer]


#: the request body models, added to the OpenAPI document's components (see
#: :func:`request_body`)
BODY_MODELS: tuple[type[BaseModel], ...] = (PzRank, PzMultiRank, PzReward, PzMultiReward)


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` that documents ``model`` as an operation's JSON body."""
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def document_personalizer(document: dict[str, Any]) -> None:
    """Finish these routes' part of the OpenAPI ``document``: the request body models (and
    the models they use) in its components, and no 422 (FastAPI declares one for every
    route with parameters; a bad name or event id is Personalizer's 400 here)."""
    _, schemas = models_json_schema(
        [(model, "validation") for model in BODY_MODELS],
        ref_template="#/components/schemas/{model}",
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(schemas["$defs"])
    for path, operations in document.get("paths", {}).items():
        if path.startswith(router.prefix):
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)


def pz_error(status: int, message: str) -> JSONResponse:
    """Personalizer's error body."""
    return personalizer_error(status, message)


T = TypeVar("T", bound=BaseModel)


async def _parse(request: Request, model: type[T]) -> T:
    try:
        return model.model_validate(orjson.loads(await request.body()))
    except orjson.JSONDecodeError as err:
        raise InvalidInput("body", f"is not JSON ({err})") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise InvalidInput(where, str(first["msg"])) from None


async def _answer(
    request: Request, name: str, work: Callable[[ModelRuntime], Awaitable[Response]]
) -> Response:
    """Run ``work`` on the model's runtime; every refusal in Personalizer's error shape."""
    try:
        registry: ModelRegistry = request.app.state.registry
        return await work(await registry.get(name))
    except InvalidInput as err:
        return pz_error(400, str(err))
    except DomainError as err:
        status = domain_status(err)
        return pz_error(400 if status == 422 else status, err.detail)
    except STORE_ERRORS:
        return pz_error(503, "the store cannot be reached now; try again")


@router.post(
    "/rank", status_code=201, responses={201: {"model": PzRankAnswer}},
    openapi_extra=request_body(PzRank),
)  # fmt: skip
async def pz_rank(name: ModelName, request: Request) -> Response:
    """Personalizer Rank: ``{ranking: [{id, probability}], eventId, rewardActionId}`` (201)."""

    async def work(runtime: ModelRuntime) -> Response:
        body = await _parse(request, PzRank)
        decision, _ = await rank(
            runtime, body.contextFeatures, [(a.id, a.features) for a in body.actions],
            excluded=body.excludedActions or (), event_id=body.eventId,
            defer=bool(body.deferActivation),
        )  # fmt: skip
        content = {
            "ranking": ranking_list(decision),
            "eventId": decision.event_id,
            "rewardActionId": played_id(decision),
        }
        return Response(orjson.dumps(content), status_code=201, media_type="application/json")

    return await _answer(request, name, work)


@router.post(
    "/events/{event_id}/reward", status_code=204, response_class=Response,
    openapi_extra=request_body(PzReward),
)  # fmt: skip
async def pz_reward(name: ModelName, event_id: EventId, request: Request) -> Response:
    """Personalizer Reward ``{value}`` in [-1, 1] (204); dropped for a deferred event not
    yet activated, as Personalizer ignores those."""

    async def work(runtime: ModelRuntime) -> Response:
        feedback = reward_feedback((await _parse(request, PzReward)).value)
        if not await is_inactive(runtime, event_id):
            await runtime.feedback(event_id, feedback, field="reward")
        return Response(status_code=204)

    return await _answer(request, name, work)


@router.post("/events/{event_id}/activate", status_code=204, response_class=Response)
async def pz_activate(name: ModelName, event_id: EventId, request: Request) -> Response:
    """Personalizer Activate (204): the deferred event's reward is now learned from."""

    async def work(runtime: ModelRuntime) -> Response:
        await activate(runtime, event_id)
        return Response(status_code=204)

    return await _answer(request, name, work)


@router.post(
    "/multislot/rank", status_code=201, responses={201: {"model": PzMultiRankAnswer}},
    openapi_extra=request_body(PzMultiRank),
)  # fmt: skip
async def pz_rank_multi_slot(name: ModelName, request: Request) -> Response:
    """Personalizer multi-slot Rank: ``{eventId, slots: [{id, rewardActionId}]}`` (201)."""

    async def work(runtime: ModelRuntime) -> Response:
        body = await _parse(request, PzMultiRank)
        slots = [
            Slot(s.id, s.features, tuple(s.excludedActions or ()), s.baselineAction)
            for s in body.slots
        ]
        event_id, filled, _ = await rank_slots(
            runtime, body.contextFeatures, [(a.id, a.features) for a in body.actions], slots,
            event_id=body.eventId, defer=bool(body.deferActivation),
        )  # fmt: skip
        answer = [{"id": slot_id, "rewardActionId": played_id(d)} for slot_id, d in filled]
        content = {"eventId": event_id, "slots": answer}
        return Response(orjson.dumps(content), status_code=201, media_type="application/json")

    return await _answer(request, name, work)


@router.post(
    "/multislot/events/{event_id}/reward", status_code=204, response_class=Response,
    openapi_extra=request_body(PzMultiReward),
)  # fmt: skip
async def pz_reward_multi_slot(name: ModelName, event_id: EventId, request: Request) -> Response:
    """Personalizer multi-slot Reward ``{reward: [{slotId, value}]}`` (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        body = await _parse(request, PzMultiReward)
        await reward_slots(
            runtime, event_id, [(r.slotId, r.value) for r in body.reward], ignore_inactive=True
        )
        return Response(status_code=204)

    return await _answer(request, name, work)


@router.post("/multislot/events/{event_id}/activate", status_code=204, response_class=Response)
async def pz_activate_multi_slot(name: ModelName, event_id: EventId, request: Request) -> Response:
    """Personalizer multi-slot Activate (204): every slot of the event."""

    async def work(runtime: ModelRuntime) -> Response:
        await activate(runtime, event_id, multislot=True)
        return Response(status_code=204)

    return await _answer(request, name, work)
