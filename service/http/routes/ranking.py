"""``/v1/models/{name}/rank`` and ``.../events/{event_id}/activate``: ranking models.

A ranking model (created with ``{"task": "ranking"}``) ranks the candidates of each
call from their features; the reward of the played one goes to ``POST .../feedback``
(``reward`` in [-1, 1], or ``loss = 1 - reward``).
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from banditree.ranking import MAX_CANDIDATES
from service.domain.operations import rank_answer
from service.domain.registry import ModelRegistry
from service.domain.runtime.ranking import MAX_EVENT_ID_LENGTH, activate
from service.domain.schemas import GivenEventId, RankBody
from service.http.deps import ModelName

router = APIRouter(prefix="/v1/models", tags=["ranking"])

#: Features of a context or a candidate: an object of named features, or a list of them
#: (merged, as Personalizer's ``contextFeatures``); nesting is a namespace.
Features = dict[str, Any] | list[dict[str, Any]]


class CandidateCreate(BaseModel):
    """One candidate action: its id and its features."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1, max_length=256)
    features: Features | None = None


class RankCreate(BaseModel):
    """Body of ``POST .../rank``."""

    model_config = ConfigDict(extra="forbid")

    context: Features | None = Field(None, description="features of the context")
    actions: list[CandidateCreate] = Field(
        ..., min_length=1, max_length=MAX_CANDIDATES, description="the candidates, unique ids"
    )
    excluded_actions: list[str] = Field(
        default_factory=list,
        max_length=MAX_CANDIDATES,
        description="ids not to play (probability 0)",
    )
    event_id: GivenEventId | None = Field(
        None,
        description="null: a new id; a rank sent again with the id of a decision still "
        "waiting for its reward gets that decision (409 once it was rewarded or expired)",
    )
    defer_activation: StrictBool = Field(
        False, description="not learned from (nor expired into a default) until activated"
    )


class RankedAction(BaseModel):
    id: str
    probability: float


class RankPublic(BaseModel):
    """The full ranking (the played candidate first), the played id and the event id."""

    event_id: str
    model_version: int
    reward_action_id: str
    ranking: list[RankedAction]
    logged: bool = True


@router.post("/{name}/rank", responses={200: {"model": RankPublic}})
async def rank_route(name: ModelName, body: RankCreate, request: Request) -> Response:
    """Rank 1 to 256 candidates for a context; the answer names the one to show.

    The decision (with every candidate and its features) waits for its reward at
    ``POST .../feedback``.  Requests with a JSON body are usually answered by the hot
    path in front of the app (:mod:`service.edge`), which runs the same
    :func:`~service.domain.operations.rank_answer`.
    """
    checked = RankBody(
        body.context, [(a.id, a.features) for a in body.actions], body.excluded_actions,
        body.event_id, body.defer_activation,
    )  # fmt: skip
    content = await rank_answer(request.app.state, name, checked)
    return Response(orjson.dumps(content), media_type="application/json")


class ActivatePublic(BaseModel):
    event_id: str
    activated: int = Field(description="decisions made learnable by this call (0: already were)")


@router.post("/{name}/events/{event_id}/activate")
async def activate_route(
    name: ModelName,
    event_id: Annotated[str, Path(min_length=1, max_length=MAX_EVENT_ID_LENGTH)],
    request: Request,
) -> ActivatePublic:
    """Activate a deferred ranking decision: its reward is now taken and learned from."""
    registry: ModelRegistry = request.app.state.registry
    runtime = await registry.get(name)
    return ActivatePublic(event_id=event_id, activated=await activate(runtime, event_id))
