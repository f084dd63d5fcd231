"""Personalizer's URL layout at the server's root: ``/personalizer[/{api-version}]/...``.

Personalizer's endpoints were host roots, and its clients build their URLs on them:
the Python SDK ``{endpoint}/personalizer/rank?api-version=...``, the JavaScript SDK
``{endpoint}/personalizer/v1.0/rank``, the REST client
``{endpoint}/personalizer/v1.1-preview.3/...``.  Every route here answers both forms
(a version segment ``v1.N`` or ``v1.N-preview.M``, or none) with Personalizer's field
names, statuses and error body, on the model
:func:`~service.http.routes.personalizer_resolve.resolve_model` picks.  Rank, reward and activate (single and multi-slot) are those of
:mod:`service.http.routes.personalizer`; the administration routes are
:mod:`service.http.routes.personalizer_admin`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from service.domain.runtime.ranking import MAX_EVENT_ID_LENGTH
from service.http.personalizer_errors import PersonalizerError
from service.http.routes import personalizer as per_model
from service.http.routes import personalizer_admin, personalizer_files, personalizer_jobs
from service.http.routes.personalizer_resolve import (
    PzRefusal,
    check_version,
    pz_refusal,
    resolve_model,
)

Endpoint = Callable[..., Awaitable[Response]]


def _data_plane(
    handler: Callable[..., Awaitable[Response]], with_event: bool
) -> Callable[..., Awaitable[Response]]:
    """A root route over a per-model Personalizer route (the model resolved first)."""

    async def with_event_id(
        request: Request, event_id: str, api_version: str | None = None
    ) -> Response:
        try:
            check_version(api_version)
            if not 1 <= len(event_id) <= MAX_EVENT_ID_LENGTH:
                raise PzRefusal(400, f"eventId: 1 to {MAX_EVENT_ID_LENGTH} characters")
            name = resolve_model(request)
        except PzRefusal as err:
            return pz_refusal(err)
        return await handler(name, event_id, request)

    async def without_event_id(request: Request, api_version: str | None = None) -> Response:
        try:
            check_version(api_version)
            name = resolve_model(request)
        except PzRefusal as err:
            return pz_refusal(err)
        return await handler(name, request)

    chosen = with_event_id if with_event else without_event_id
    chosen.__doc__ = handler.__doc__
    chosen.__name__ = f"root_{handler.__name__}"
    return chosen


#: (method, path, endpoint, success status) of the rank, reward and activate routes
DATA_ROUTES: list[tuple[str, str, Endpoint, int]] = [
    ("POST", "/rank", _data_plane(per_model.pz_rank, False), 201),
    ("POST", "/events/{event_id}/reward", _data_plane(per_model.pz_reward, True), 204),
    ("POST", "/events/{event_id}/activate", _data_plane(per_model.pz_activate, True), 204),
    ("POST", "/multislot/rank", _data_plane(per_model.pz_rank_multi_slot, False), 201),
    (
        "POST",
        "/multislot/events/{event_id}/reward",
        _data_plane(per_model.pz_reward_multi_slot, True),
        204,
    ),
    (
        "POST",
        "/multislot/events/{event_id}/activate",
        _data_plane(per_model.pz_activate_multi_slot, True),
        204,
    ),
]


#: the refusals every root route can answer, in Personalizer's error body
REFUSALS: dict[int | str, dict[str, Any]] = {
    status: {"model": PersonalizerError, "description": description}
    for status, description in (
        (400, "A field is invalid, or no model is decided for the key: the message says which."),
        (401, "No key, or an unknown key."),
        (403, "The key lacks the role, or does not reach the default model."),
        (404, "No such API version, model, event, evaluation or feature importance."),
        (409, "An id already used, or a reward already given."),
        (503, "The store cannot be reached now: retry."),
    )
}


def build_router() -> APIRouter:
    """Every root route, unversioned first (so ``/personalizer/multislot/...`` is never
    read as version ``multislot``), then under ``/{api_version}``."""
    router = APIRouter(prefix="/personalizer", tags=["personalizer"])
    routes: list[tuple[str, str, Endpoint, int]] = [
        *DATA_ROUTES, *personalizer_admin.ROUTES, *personalizer_jobs.ROUTES,
        *personalizer_files.ROUTES,
    ]  # fmt: skip
    for prefix in ("", "/{api_version}"):
        for method, path, endpoint, status in routes:
            extra: dict[str, Any] = {}
            responses = REFUSALS
            if status == 204:
                extra["response_class"] = Response
            if endpoint in personalizer_files.BINARY:
                extra["response_class"] = Response
                binary = {"content": {"application/octet-stream": {}}, "description": "A file."}
                responses = {**REFUSALS, status: binary}
            router.add_api_route(
                prefix + path, endpoint, methods=[method], status_code=status,
                name=f"{endpoint.__name__}{'_versioned' if prefix else ''}",
                responses=responses, **extra,
            )  # fmt: skip
    return router


router = build_router()
