"""``/v1/models/{name}/predict`` and ``/feedback``: the hot path.

The routes check the body with its schema and run the operation of
:mod:`service.domain.operations` (the fast front in :mod:`service.edge` runs the same
one); the content is encoded here, by ``orjson``.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from service.domain.operations import decide, give_feedback
from service.domain.schemas import (
    DecisionBatchPublic,
    DecisionPublic,
    FeedbackCreate,
    FeedbackPublic,
    PredictCreate,
)
from service.http.deps import ModelName

__all__ = ["router"]

router = APIRouter(prefix="/v1/models", tags=["decisions"])


@router.post(
    "/{name}/predict",
    responses={200: {"model": DecisionPublic | DecisionBatchPublic}},
    response_class=JSONResponse,
)
async def predict(name: ModelName, body: PredictCreate, request: Request) -> Response:
    """Decide for one ``context`` (one decision) or a batch of ``contexts`` (``decisions``).

    Requests with a JSON body are usually answered by the hot path in front of the
    app (:mod:`service.edge`), which runs the same
    :func:`~service.domain.operations.decide`.
    """
    content = await decide(request.app.state, name, body)
    # the same compact JSON as JSONResponse, encoded by orjson (a fraction of the time)
    return Response(orjson.dumps(content), media_type="application/json")


@router.post("/{name}/feedback")
async def feedback(name: ModelName, body: FeedbackCreate, request: Request) -> FeedbackPublic:
    """Report the loss (or reward, or two-point losses) of a pending decision.

    Requests with a JSON body are usually answered by the hot path in front of the
    app (:mod:`service.edge`), which runs the same
    :func:`~service.domain.operations.give_feedback`.
    """
    await give_feedback(request.app.state, name, body)
    return FeedbackPublic(status="accepted", event_id=body.event_id)
