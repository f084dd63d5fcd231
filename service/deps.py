"""Dependency aliases: handlers read like types (``registry: RegistryDep``)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.errors import ServiceError
from service.metrics import ServiceMetrics
from service.registry import ModelRegistry
from service.runtime import ModelRuntime
from service.settings import Settings

#: Model names: letters, digits, ``_ . -``; at most 64 characters.
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

_bearer = HTTPBearer(auto_error=False, description="an API key from BANDITREE_API_KEYS")


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_registry(request: Request) -> ModelRegistry:
    registry: ModelRegistry = request.app.state.registry
    return registry


def get_metrics(request: Request) -> ServiceMetrics:
    metrics: ServiceMetrics = request.app.state.metrics
    return metrics


SettingsDep = Annotated[Settings, Depends(get_settings)]
RegistryDep = Annotated[ModelRegistry, Depends(get_registry)]
MetricsDep = Annotated[ServiceMetrics, Depends(get_metrics)]
ModelName = Annotated[str, Path(pattern=MODEL_NAME_PATTERN, description="model name")]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def get_runtime(name: ModelName, registry: RegistryDep) -> ModelRuntime:
    return await registry.get(name)


RuntimeDep = Annotated[ModelRuntime, Depends(get_runtime)]


def _matches(key: str, keys: list[str]) -> bool:
    return any(hmac.compare_digest(key.encode(), k.encode()) for k in keys)


def require_api_key(settings: SettingsDep, credentials: Credentials) -> None:
    """Any configured key (API or admin); open when no key is configured."""
    if not settings.auth_enabled:
        return
    if credentials is None:
        raise ServiceError(
            401, "missing API key: send 'Authorization: Bearer <key>'", "authorization"
        )
    if not _matches(credentials.credentials, settings.api_keys + settings.admin_keys):
        raise ServiceError(401, "unknown API key", "authorization")


def require_admin_key(settings: SettingsDep, credentials: Credentials) -> None:
    """An admin key (model create, delete, rollback); open when no key is configured."""
    require_api_key(settings, credentials)
    if settings.auth_enabled and credentials is not None:
        if not _matches(credentials.credentials, settings.admin_keys):
            raise ServiceError(403, "this route needs an admin key", "authorization")


ApiKeyDep = Depends(require_api_key)
AdminKeyDep = Depends(require_admin_key)
