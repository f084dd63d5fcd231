"""``/v1/models``: create, list, inspect, delete models; export the hard tree."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Response

from banditree.learners import Apprentice, Learner
from service.deps import ModelName, RegistryDep, RuntimeDep
from service.runtime import ModelRuntime
from service.schemas import (
    ApprenticePublic,
    ModelCounters,
    ModelCreate,
    ModelList,
    ModelPolicy,
    ModelPublic,
)

router = APIRouter(prefix="/v1/models", tags=["models"])


def model_public(runtime: ModelRuntime) -> ModelPublic:
    """The public view of a served model."""
    counters = runtime.learner.counters
    mean_loss = float(counters.get("progressive_mean_loss", math.nan))
    policy = runtime.policy
    return ModelPublic(
        name=runtime.name,
        config=runtime.learner.config(),
        policy=ModelPolicy(
            checkpoint_every_updates=policy.checkpoint_every_updates,
            checkpoint_every_seconds=policy.checkpoint_every_seconds,
            event_ttl_seconds=policy.event_ttl_seconds,
            default_loss=policy.default_loss,
        ),
        version=runtime.learner.version,
        counters=ModelCounters(
            predictions=int(counters.get("decisions", 0)),
            feedback=int(counters.get("feedback", 0)),
            updates=int(counters.get("updates", runtime.learner.version)),
            progressive_mean_loss=mean_loss if math.isfinite(mean_loss) else None,
        ),
        pending_updates=runtime.pending_updates,
        **apprentice_public(runtime.learner),
    )


def apprentice_public(learner: Learner) -> dict[str, Any]:
    """``mode`` and, for an apprentice-mode learner, its agreement figures."""
    if not isinstance(learner, Apprentice):
        return {}
    return {
        "mode": learner.mode,
        "apprentice": ApprenticePublic.model_validate(learner.agreement()),
    }


@router.put("/{name}", status_code=201)
async def create_model(name: ModelName, body: ModelCreate, registry: RegistryDep) -> ModelPublic:
    """Create a model from a learner config (plus optional checkpoint and event policy)."""
    return model_public(await registry.create(name, body))


@router.get("")
async def list_models(registry: RegistryDep) -> ModelList:
    """Every model this process serves."""
    return ModelList(models=[model_public(r) for r in registry.runtimes.values()])


@router.get("/{name}")
async def get_model(runtime: RuntimeDep) -> ModelPublic:
    """Config, version and counters of one model."""
    return model_public(runtime)


@router.delete("/{name}", status_code=204)
async def delete_model(name: ModelName, registry: RegistryDep) -> Response:
    """Delete a model with its checkpoints."""
    await registry.delete(name)
    return Response(status_code=204)


@router.get("/{name}/tree")
async def export_tree(runtime: RuntimeDep) -> dict[str, Any]:
    """The served model as JSON (the hard tree for tree models), with its version."""
    return {"version": runtime.learner.version, "model": runtime.learner.export_model()}
