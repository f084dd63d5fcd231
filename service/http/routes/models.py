"""``/v1/models``: create, list, inspect, delete models; export the hard tree."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Request, Response

from banditree.learners import Learner, LearnerConfig
from service.domain.operations import SCOPE_STATE_KEY, visible
from service.domain.runtime import ModelRuntime
from service.domain.runtime.glance import ModelGlance, glance
from service.domain.schemas import (
    ApprenticePublic,
    ModelCounters,
    ModelCreate,
    ModelList,
    ModelPolicy,
    ModelPublic,
    ModelStatus,
    TreeExport,
)
from service.http.deps import ModelName, RegistryDep, RuntimeDep
from service.http.errors import ServiceError
from service.settings import Settings

router = APIRouter(prefix="/v1/models", tags=["models"])

#: upper bound of the JSON bytes one exported parameter takes (a float64 and a comma)
EXPORT_BYTES_PER_PARAMETER = 26


#: the configuration keys a summary keeps (the overview's columns)
SUMMARY_CONFIG_KEYS = ("kind", "task")


def model_public(runtime: ModelRuntime, *, summary: bool = False) -> ModelPublic:
    """The public view of a served model; ``summary`` keeps only ``kind`` and ``task`` of the config."""
    return glance_public(glance(runtime), summary=summary)


def glance_public(seen: ModelGlance, *, summary: bool = False) -> ModelPublic:
    """The public view of a model's figures (loaded or read from the store)."""
    counters = seen.counters
    config = seen.config
    if summary:
        config = {k: config[k] for k in SUMMARY_CONFIG_KEYS if k in config}
    mean_loss = counters.get("progressive_mean_loss")
    policy = seen.policy
    published = seen.published_at
    updates = counters.get("updates")
    return ModelPublic(
        name=seen.name,
        config=config,
        policy=ModelPolicy(
            checkpoint_every_updates=policy.checkpoint_every_updates,
            checkpoint_every_seconds=policy.checkpoint_every_seconds,
            event_ttl_seconds=policy.event_ttl_seconds,
            default_loss=policy.default_loss,
        ),
        version=seen.version,
        counters=ModelCounters(
            predictions=int(counters.get("decisions") or 0),
            feedback=int(counters.get("feedback") or 0),
            updates=int(seen.version if updates is None else updates),
            progressive_mean_loss=float(mean_loss)
            if mean_loss is not None and math.isfinite(mean_loss)
            else None,
        ),
        pending_updates=seen.pending_updates,
        status=ModelStatus(
            pending_decisions=seen.pending_decisions,
            checkpoint_age_seconds=time.time() - published if published else None,
            learner_holder=seen.lease_holder,
        ),
        **apprentice_fields(seen.apprentice),
    )


def apprentice_fields(apprentice: dict[str, Any] | None) -> dict[str, Any]:
    """``mode`` and ``apprentice`` of a model created in apprentice mode (none else)."""
    if apprentice is None:
        return {}
    return {
        "mode": apprentice["mode"],
        "apprentice": ApprenticePublic.model_validate(apprentice["agreement"]),
    }


@router.put("/{name}", status_code=201)
async def create_model(name: ModelName, body: ModelCreate, registry: RegistryDep) -> ModelPublic:
    """Create a model from a learner config (plus optional checkpoint and event policy).

    409 when the name is taken or this process already serves ``max_models`` models.
    """
    return model_public(await registry.create(name, body))


@router.get("")
async def list_models(
    registry: RegistryDep,
    request: Request,
    view: Annotated[
        Literal["full", "summary"],
        Query(description="summary: each config cut to kind and task (a lighter list)"),
    ] = "full",
) -> ModelList:
    """Every model this process serves (that the request's key reaches), loaded or not."""
    patterns = getattr(request.state, SCOPE_STATE_KEY, None)
    summary = view == "summary"
    known = registry.records if registry.serves else {}  # a learner-only process serves none
    names = [name for name in known if visible(patterns, name)]
    return ModelList(
        models=await registry.views(names, lambda g: glance_public(g, summary=summary), view)
    )


@router.get("/{name}")
async def get_model(runtime: RuntimeDep) -> ModelPublic:
    """Config, version and counters of one model."""
    return model_public(runtime)


@router.delete("/{name}", status_code=204)
async def delete_model(name: ModelName, registry: RegistryDep) -> Response:
    """Delete a model with its checkpoints."""
    await registry.delete(name)
    return Response(status_code=204)


def estimated_export_bytes(learner: Learner) -> int:
    """An upper bound of the export's JSON size, from the configuration alone."""
    try:
        parameters = LearnerConfig.model_validate(learner.config()).parameter_count()
    except ValueError:
        return 0  # not a learner config (no parameters to speak of)
    return parameters * EXPORT_BYTES_PER_PARAMETER


def _export_json(learner: Learner) -> bytes:
    """The export document, encoded (runs in a worker thread: proportional to model size)."""
    document: dict[str, Any] = {"version": learner.version, "model": learner.export_model()}
    return orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY, default=_plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


@router.get("/{name}/tree", response_model=TreeExport, response_class=Response)
async def export_tree(runtime: RuntimeDep, request: Request) -> Response:
    """The served model as JSON (the hard tree for tree models), with its version.

    Built in a worker thread, one export at a time; 413 when it would be larger than
    ``max_export_bytes`` (read the model from a checkpoint instead).
    """
    return await export_response(runtime.learner, runtime.name, request)


async def export_response(learner: Learner, name: str, request: Request) -> Response:
    """The export of ``learner`` (model ``name``) as a JSON answer; 413 past ``max_export_bytes``."""
    settings: Settings = request.app.state.settings
    limit = settings.max_export_bytes
    estimate = estimated_export_bytes(learner)
    if estimate > limit:
        raise ServiceError(
            413, f"the export of model {name!r} would take about {estimate} bytes, "
            f"more than max_export_bytes={limit}", "name",
        )  # fmt: skip
    async with request.app.state.export_slots:
        body = await asyncio.to_thread(_export_json, learner)
    if len(body) > limit:
        raise ServiceError(
            413, f"the export of model {name!r} takes {len(body)} bytes, "
            f"more than max_export_bytes={limit}", "name",
        )  # fmt: skip
    return Response(body, media_type="application/json")
