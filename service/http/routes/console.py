"""The routes the console reads beyond the model routes: the key's roles, per-leaf
statistics and a context's trace (all public API: anything the console shows can be
scripted)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from service.domain.operations import ROLES_STATE_KEY, SCOPE_STATE_KEY, visible
from service.domain.schemas import MAX_BATCH_LENGTH, Context
from service.domain.series import SAMPLE_SECONDS, ModelSeries
from service.http.deps import RuntimeDep
from service.http.errors import ServiceError
from service.settings import ROLES, Settings

router = APIRouter(tags=["console"])


class WhoAmI(BaseModel):
    """What the request's key may do."""

    roles: list[str] = Field(description="predict, read, admin")
    models: list[str] | None = Field(
        description="the model names or patterns it reaches; null: every model"
    )
    open: bool = Field(description="no key is configured: every route is open")


@router.get("/v1/whoami")
async def whoami(request: Request) -> WhoAmI:
    """The roles and models of the key this request carries (the console shows what they allow)."""
    settings: Settings = request.app.state.settings
    if not settings.auth_enabled:
        return WhoAmI(roles=sorted(ROLES), models=None, open=True)
    state = request.scope.get("state", {})
    models = state.get(SCOPE_STATE_KEY)
    return WhoAmI(
        roles=sorted(state.get(ROLES_STATE_KEY, ())),
        models=None if models is None else list(models),
        open=False,
    )


class LeavesPublic(BaseModel):
    """Per-leaf statistics of the served model (learner state, counted in log order)."""

    version: int
    leaf_stats: dict[str, Any] | None = Field(
        description="per tree and leaf: decisions, feedbacks, mean_loss, share, action_counts; null for a model without leaves"
    )
    probabilities: list[list[list[float]]] | None = Field(
        description="[tree][leaf][action]: the explorer's pmf on each leaf's own values (one tree, classification)"
    )
    scaling: dict[str, list[float]] | None = Field(
        description="the served mean and scale of numeric contexts (splits in the caller's units)"
    )
    blend: dict[str, Any] | None = Field(
        None,
        description=(
            "a boosted model: the leaves above are its online tree's, which decisions blend "
            "with the refitted ensemble; shown (online_tree), ensemble_weight (the "
            "ensemble's weight in the blend now), ensemble_decides, fits, n_trees; null "
            "for a model whose trees are the whole policy"
        ),
    )


@router.get("/v1/models/{name}/leaves")
async def leaves(runtime: RuntimeDep) -> LeavesPublic:
    """Per leaf of each tree: decisions, feedbacks, mean loss, traffic share and per-action counts."""
    learner = runtime.learner
    return LeavesPublic(
        version=learner.version,
        leaf_stats=learner.leaf_stats(),
        probabilities=learner.leaf_probabilities(),
        scaling=learner.input_scaling(),
        blend=learner.blend_state(),
    )


class RecentPublic(BaseModel):
    """One model's recent figures, from this process's samples of its counters."""

    seconds: float = Field(description="the span the rates cover (up to a minute)")
    decisions_per_second: float | None
    feedback_per_second: float | None
    window_loss: float | None = Field(description="mean loss of the feedback learned in the span")
    loss_trend: list[float | None] = Field(
        description="windowed losses over the last ten minutes, oldest first (null: no feedback)"
    )


class SeriesPublic(BaseModel):
    """Every model's recent figures (the models the key reaches; none before two samples)."""

    sample_seconds: float
    models: dict[str, RecentPublic]


@router.get("/v1/series", response_model=SeriesPublic, response_class=Response)
async def series(request: Request) -> Response:
    """Decisions and feedbacks per second over the last minute, the loss of the feedback
    learned in it, and a ten-minute loss trend, per model this process serves."""
    sampled: ModelSeries = request.app.state.series
    patterns = request.scope.get("state", {}).get(SCOPE_STATE_KEY)
    models = {}
    for name in request.app.state.registry.runtimes:
        if visible(patterns, name) and (figures := sampled.figures(name)) is not None:
            models[name] = figures
    # the figures are plain floats made here: encoded as they are (a thousand models'
    # worth each poll of the overview), not validated again model by model
    body = {"sample_seconds": SAMPLE_SECONDS, "models": models}
    return Response(orjson.dumps(body), media_type="application/json")


class DriftPublic(BaseModel):
    """The change detector's signals of the served model (learner state)."""

    version: int
    signals: int = Field(description="signals since the model was created")
    events: list[dict[str, Any]] = Field(
        description="the newest signals, oldest first: signal (its number), test (rise or "
        "jump), rounds (since the previous one), event_id (the decision whose feedback set "
        "it off), feedback (the learner's feedback count then), version"
    )


@router.get("/v1/models/{name}/drift")
async def drift(runtime: RuntimeDep) -> DriftPublic:
    """When the learner's change detector signalled a rise of the loss (none without one)."""
    learner = runtime.learner
    return DriftPublic(
        version=learner.version,
        signals=int(learner.counters.get("drift_signals", 0)),
        events=learner.drift_events(),
    )


class TraceCreate(BaseModel):
    """One ``context`` or a list of ``contexts`` to trace (nothing is decided or stored)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    context: Context | None = None
    contexts: Annotated[list[Context], Field(max_length=MAX_BATCH_LENGTH)] | None = None


def _trace_one(learner: Any, context: Any) -> dict[str, Any]:
    raw = learner.trace(context)
    decision = {k: raw[k] for k in ("greedy_action", "probabilities", "greedy_value") if k in raw}
    if "estimates" in raw:
        decision["scores"] = raw["estimates"]
    traced = {"trees": raw["trees"], "decision": decision, "explanation": raw.get("explanation")}
    if raw.get("blend") is not None:  # a boosted model: the path is its online tree's
        traced["blend"] = raw["blend"]
        traced["online_tree"] = raw["online_tree"]
    return traced


@router.post("/v1/models/{name}/trace")
async def trace(body: TraceCreate, runtime: RuntimeDep, request: Request) -> dict[str, Any]:
    """Each context's path through every tree, the probabilities, the named explanation and
    the greedy answer predict would give, from the served snapshot; nothing is decided.

    A boosted model's path and explanation are its online tree's, which its decisions
    blend with the refitted ensemble: its traces add ``blend`` (the ensemble's
    ``ensemble_weight`` now) and ``online_tree`` (the tree's own estimates,
    probabilities and greedy action); ``decision`` is the model's, the blend's."""
    settings: Settings = request.app.state.settings
    contexts = [body.context] if body.context is not None else list(body.contexts or [])
    if not contexts or (body.context is not None and body.contexts is not None):
        raise ServiceError(422, "give exactly one of 'context' or 'contexts'", "context")
    if len(contexts) > settings.max_batch:
        raise ServiceError(
            413,
            f"contexts holds {len(contexts)} items, more than max_batch={settings.max_batch}",
            "contexts",
        )
    learner = runtime.learner
    traces = (
        [_trace_one(learner, c) for c in contexts]
        if len(contexts) < 8
        else await asyncio.to_thread(lambda: [_trace_one(learner, c) for c in contexts])
    )
    return {"version": learner.version, "traces": traces}
