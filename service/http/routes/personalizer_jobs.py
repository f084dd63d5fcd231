"""Personalizer's offline evaluations and feature importances (``/personalizer[/{version}]``).

Each is a background job of :class:`service.domain.jobs.Jobs` running
:mod:`service.domain.personalizer.evaluations`: created with its id (the Python SDK's
``PUT .../{id}``, 200) or with one made here (the REST client's ``POST /evaluations``,
201 with a ``Location``), read while it runs and after, listed and deleted (204).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from fastapi import Request
from fastapi.responses import Response

from service.domain.errors import InvalidRequest
from service.domain.jobs import Job
from service.domain.personalizer import evaluations as ev
from service.domain.personalizer.configuration import check_explorer, ranking_model
from service.domain.runtime import ModelRuntime
from service.http.routes.personalizer_resolve import jobs, json_response, read_body, run_admin

Endpoint = Callable[..., Awaitable[Response]]
#: most ids of an evaluation or a feature importance
MAX_ID_LENGTH = 256


def _checked_id(job_id: str) -> str:
    if not 1 <= len(job_id) <= MAX_ID_LENGTH:
        raise InvalidRequest(f"id: 1 to {MAX_ID_LENGTH} characters", "id")
    return job_id


def _page(request: Request, items: list[dict[str, object]]) -> list[dict[str, object]]:
    """``skip`` and ``top`` of the Python SDK's lists; a ``filter`` is refused (400)."""
    if request.query_params.get("filter"):
        raise InvalidRequest(
            "filter: banditree does not filter evaluations by metadata; list them all", "filter"
        )
    try:
        skip = int(request.query_params.get("skip", 0))
        top = request.query_params.get("top")
        count = None if top is None else int(top)
    except ValueError:
        raise InvalidRequest("skip and top must be integers", "top") from None
    if skip < 0 or (count is not None and count < 0):
        raise InvalidRequest("skip and top must be >= 0", "top")
    return items[skip:] if count is None else items[skip : skip + count]


async def _create_evaluation(request: Request, runtime: ModelRuntime, job_id: str) -> Job:
    checked = ev.evaluation_request(await read_body(request))
    model = ranking_model(runtime.learner, runtime.name)
    for i, (_, settings) in enumerate(checked["policies"]):
        check_explorer(model, settings, f"policies[{i}].arguments")
    return jobs(request).start(
        runtime.name, ev.KIND, job_id, checked, lambda: ev.run_evaluation(runtime, checked)
    )


async def create_evaluation(
    request: Request, evaluation_id: str, api_version: str | None = None
) -> Response:
    """Start an offline evaluation over the model's log (200)."""

    async def work(runtime: ModelRuntime) -> Response:
        job = await _create_evaluation(request, runtime, _checked_id(evaluation_id))
        body = ev.evaluation_body(job, lower_case=api_version is not None)
        return json_response(body, headers={"Location": str(request.url.path)})

    return await run_admin(request, api_version, work)


async def submit_evaluation(request: Request, api_version: str | None = None) -> Response:
    """Start an offline evaluation with an id made here (201, ``Location``)."""

    async def work(runtime: ModelRuntime) -> Response:
        job = await _create_evaluation(request, runtime, uuid.uuid4().hex)
        body = ev.evaluation_body(job, lower_case=api_version is not None)
        location = f"{request.url.path.rstrip('/')}/{job.id}"
        return json_response(body, 201, headers={"Location": location})

    return await run_admin(request, api_version, work)


async def get_evaluation(
    request: Request, evaluation_id: str, api_version: str | None = None
) -> Response:
    """The evaluation: its status and, once succeeded, each policy's expected reward."""

    async def work(runtime: ModelRuntime) -> Response:
        job = jobs(request).get(runtime.name, ev.KIND, evaluation_id)
        return json_response(ev.evaluation_body(job, lower_case=api_version is not None))

    return await run_admin(request, api_version, work)


async def list_evaluations(request: Request, api_version: str | None = None) -> Response:
    """The model's evaluations, oldest first."""

    async def work(runtime: ModelRuntime) -> Response:
        held = jobs(request).list(runtime.name, ev.KIND)
        lower = api_version is not None
        if lower:  # v1.1: an array of whole evaluations
            return json_response([ev.evaluation_body(j, lower_case=True) for j in held])
        items = [ev.evaluation_body(j, lower_case=False, full=False) for j in held]
        return json_response({"value": _page(request, items), "nextLink": None})

    return await run_admin(request, api_version, work)


async def delete_evaluation(
    request: Request, evaluation_id: str, api_version: str | None = None
) -> Response:
    """Forget the evaluation (cancelled if it runs) (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        jobs(request).delete(runtime.name, ev.KIND, evaluation_id)
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


async def create_feature_importance(
    request: Request, feature_importance_id: str, api_version: str | None = None
) -> Response:
    """Start a feature importance of the served model over its log (200)."""

    async def work(runtime: ModelRuntime) -> Response:
        checked = ev.importance_request(await read_body(request))
        ranking_model(runtime.learner, runtime.name)
        job = jobs(request).start(
            runtime.name, ev.IMPORTANCE_KIND, _checked_id(feature_importance_id), checked,
            lambda: ev.run_importance(runtime, checked),
        )  # fmt: skip
        return json_response(ev.importance_body(job), headers={"Location": request.url.path})

    return await run_admin(request, api_version, work)


async def get_feature_importance(
    request: Request, feature_importance_id: str, api_version: str | None = None
) -> Response:
    """The feature importance: its status and, once succeeded, ``featureScores``."""

    async def work(runtime: ModelRuntime) -> Response:
        job = jobs(request).get(runtime.name, ev.IMPORTANCE_KIND, feature_importance_id)
        return json_response(ev.importance_body(job))

    return await run_admin(request, api_version, work)


async def list_feature_importances(request: Request, api_version: str | None = None) -> Response:
    """The model's feature importances, oldest first."""

    async def work(runtime: ModelRuntime) -> Response:
        held = jobs(request).list(runtime.name, ev.IMPORTANCE_KIND)
        items = [ev.importance_body(j, full=False) for j in held]
        return json_response({"value": _page(request, items), "nextLink": None})

    return await run_admin(request, api_version, work)


async def delete_feature_importance(
    request: Request, feature_importance_id: str, api_version: str | None = None
) -> Response:
    """Forget the feature importance (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        jobs(request).delete(runtime.name, ev.IMPORTANCE_KIND, feature_importance_id)
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


ROUTES: list[tuple[str, str, Endpoint, int]] = [
    ("GET", "/evaluations", list_evaluations, 200),
    ("POST", "/evaluations", submit_evaluation, 201),
    ("GET", "/evaluations/{evaluation_id}", get_evaluation, 200),
    ("PUT", "/evaluations/{evaluation_id}", create_evaluation, 200),
    ("DELETE", "/evaluations/{evaluation_id}", delete_evaluation, 204),
    ("GET", "/featureImportances", list_feature_importances, 200),
    ("GET", "/featureImportances/{feature_importance_id}", get_feature_importance, 200),
    ("PUT", "/featureImportances/{feature_importance_id}", create_feature_importance, 200),
    ("DELETE", "/featureImportances/{feature_importance_id}", delete_feature_importance, 204),
]
