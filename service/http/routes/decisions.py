"""``/v1/models/{name}/predict`` and ``/feedback``: the hot path."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import State

from banditree.core import Feedback
from banditree.core.codec import columns_public, decision_public
from banditree.learners.base import Learner
from banditree.learners.featured import FeaturedLearner
from banditree.learners.inferring import InferringLearner
from banditree.learners.reward import feedback_from_reward
from service.domain.apprentice import apprentice_predict
from service.domain.registry import ModelRegistry
from service.domain.requests import FeedbackBody, PredictBody
from service.domain.schemas import (
    DecisionBatchPublic,
    DecisionPublic,
    FeedbackCreate,
    FeedbackPublic,
    PredictCreate,
)
from service.http.deps import ModelName
from service.http.errors import ServiceError
from service.settings import Settings

__all__ = ["columns_public", "decide", "decision_public", "give_feedback", "router"]

router = APIRouter(prefix="/v1/models", tags=["decisions"])


def _explanations(learner: Learner, body: PredictCreate | PredictBody) -> list[list[str]]:
    """Each context's leaf path as named conditions (models with features, single trees)."""
    if not isinstance(learner, FeaturedLearner | InferringLearner):
        raise ServiceError(
            422, "explain needs a model whose contexts are named features", "explain"
        )
    contexts = [body.context] if body.context is not None else list(body.contexts or [])
    return [learner.explain(_named(c)) for c in contexts]


def _named(context: Any) -> dict[str, Any]:
    if not isinstance(context, dict):
        raise ServiceError(422, "must be an object of named features", "context")
    return context


async def decide(state: State, name: str, body: PredictCreate | PredictBody) -> bytes:
    """The JSON answer of a predict: the route and the hot path (:mod:`service.edge`)."""
    settings: Settings = state.settings
    registry: ModelRegistry = state.registry
    runtime = await registry.get(name)
    if body.contexts is not None and len(body.contexts) > settings.max_batch:
        raise ServiceError(
            413, f"contexts holds {len(body.contexts)} items, more than max_batch={settings.max_batch}",
            "contexts",
        )  # fmt: skip
    defaults = body.defaults()  # checked, and played, only where the model takes them
    content: dict[str, Any]
    # explained before deciding, with no await between: the same snapshot decides
    explained = _explanations(runtime.learner, body) if body.explain else None
    if explained is not None and body.context is not None:
        decisions, logged = await apprentice_predict(
            runtime, [body.context], defaults, runtime.predict
        )
        content = decision_public(decisions[0])
    elif body.context is not None:  # decided with the others of this loop tick
        content, logged = await apprentice_predict(
            runtime, [body.context], defaults, runtime.predict_in_tick
        )
    else:  # a batch: its decisions held column by column
        columns, logged = await apprentice_predict(
            runtime, body.contexts or [], defaults, runtime.predict_columns
        )
        content = {"decisions": columns_public(columns)}
    if explained is not None:
        for row, why in zip(content.get("decisions", [content]), explained, strict=True):
            row["explanation"] = why
    if not logged:  # the store is away: answered from memory, feedback cannot be taken
        content["logged"] = False
    # the same compact JSON as JSONResponse, encoded by orjson (a fraction of the time)
    return orjson.dumps(content)


@router.post(
    "/{name}/predict",
    responses={200: {"model": DecisionPublic | DecisionBatchPublic}},
    response_class=JSONResponse,
)
async def predict(name: ModelName, body: PredictCreate, request: Request) -> Response:
    """Decide for one ``context`` (one decision) or a batch of ``contexts`` (``decisions``).

    Requests with a JSON body are usually answered by the hot path in front of the
    app (:mod:`service.edge`), which runs the same :func:`decide`.
    """
    return Response(await decide(request.app.state, name, body), media_type="application/json")


async def give_feedback(state: State, name: str, body: FeedbackCreate | FeedbackBody) -> None:
    """Log the feedback of a predict: the route and the hot path (:mod:`service.edge`)."""
    registry: ModelRegistry = state.registry
    runtime = await registry.get(name)
    if body.losses is not None:
        fb, field = Feedback(losses=(body.losses[0], body.losses[1])), "losses"
    elif body.reward is not None:
        fb, field = feedback_from_reward(body.reward, runtime.learner.task), "reward"
    else:
        fb, field = Feedback(loss=body.loss), "loss"
    await runtime.feedback(body.event_id, fb, field=field)


@router.post("/{name}/feedback")
async def feedback(name: ModelName, body: FeedbackCreate, request: Request) -> FeedbackPublic:
    """Report the loss (or reward, or two-point losses) of a pending decision.

    Requests with a JSON body are usually answered by the hot path in front of the
    app (:mod:`service.edge`), which runs the same :func:`give_feedback`.
    """
    await give_feedback(request.app.state, name, body)
    return FeedbackPublic(status="accepted", event_id=body.event_id)
