"""Dependency aliases: handlers read like types (``registry: RegistryDep``).

Every dependency is ``async def`` and reads ``request.app.state``: FastAPI runs plain
``def`` dependencies in a worker thread.  API keys are checked by
:class:`service.edge.app.ServiceHttp` middleware, before routing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from service.domain.registry import ModelRegistry
from service.domain.runtime import ModelRuntime
from service.telemetry.metrics import ServiceMetrics

#: Model names: letters, digits, ``_ . -``; at most 64 characters.
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


async def get_registry(request: Request) -> ModelRegistry:
    registry: ModelRegistry = request.app.state.registry
    return registry


async def get_metrics(request: Request) -> ServiceMetrics:
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


RegistryDep = Annotated[ModelRegistry, Depends(get_registry)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
ModelName = Annotated[str, Path(pattern=MODEL_NAME_PATTERN, description="model name")]


async def get_runtime(request: Request, name: ModelName) -> ModelRuntime:
    registry: ModelRegistry = request.app.state.registry
    return await registry.get(name)


RuntimeDep = Annotated[ModelRuntime, Depends(get_runtime)]
