"""Personalizer's service configuration and policy routes (``/personalizer[/{version}]``).

Mapped onto the model by :mod:`service.domain.personalizer.configuration`: the
configuration's exploration percentage and learning mode apply, its other changes are
refused naming the field; the policy is the explorer as VW arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from banditree.learners import Learner
from banditree.ranking import RankingModel
from service.domain.errors import InvalidRequest
from service.domain.personalizer import configuration as conf
from service.domain.personalizer import evaluations as ev
from service.domain.runtime import ModelRuntime
from service.http.routes.personalizer_resolve import jobs, json_response, read_body, run_admin

Endpoint = Callable[..., Awaitable[Response]]


async def _change(runtime: ModelRuntime, change: Callable[[Learner], None] | None) -> None:
    if change is not None:
        await runtime.replace(change)


def _set_explorer(settings: Any) -> Callable[[Learner], None]:
    def change(learner: Learner) -> None:
        assert isinstance(learner, RankingModel)
        learner.set_explorer(settings.explorer, settings.parameter, settings.exponent)

    return change


# -- service configuration and policy ---------------------------------------------------
async def get_service_configuration(request: Request, api_version: str | None = None) -> Response:
    """Personalizer's service configuration of the model."""

    async def work(runtime: ModelRuntime) -> Response:
        return json_response(conf.service_configuration(runtime))

    return await run_admin(request, api_version, work)


async def update_service_configuration(
    request: Request, api_version: str | None = None
) -> Response:
    """Apply the exploration percentage and learning mode; refuse other changes (400)."""

    async def work(runtime: ModelRuntime) -> Response:
        await _change(runtime, conf.configuration_change(runtime, await read_body(request)))
        return json_response(conf.service_configuration(runtime))

    return await run_admin(request, api_version, work)


async def get_policy(request: Request, api_version: str | None = None) -> Response:
    """The model's explorer as VW arguments."""

    async def work(runtime: ModelRuntime) -> Response:
        return json_response(conf.policy_body(conf.ranking_model(runtime.learner, runtime.name)))

    return await run_admin(request, api_version, work)


async def update_policy(request: Request, api_version: str | None = None) -> Response:
    """Explore as the VW arguments say (400 naming an argument that does not map)."""

    async def work(runtime: ModelRuntime) -> Response:
        model = conf.ranking_model(runtime.learner, runtime.name)
        settings = conf.policy_settings(await read_body(request))
        conf.check_explorer(model, settings, "arguments")
        await _change(runtime, _set_explorer(settings))
        return json_response(conf.policy_body(conf.ranking_model(runtime.learner, runtime.name)))

    return await run_admin(request, api_version, work)


async def reset_policy(request: Request, api_version: str | None = None) -> Response:
    """Explore as the model was created to."""

    async def work(runtime: ModelRuntime) -> Response:
        model = conf.ranking_model(runtime.learner, runtime.name)
        await _change(runtime, _set_explorer(conf.created_settings(model)))
        return json_response(conf.policy_body(conf.ranking_model(runtime.learner, runtime.name)))

    return await run_admin(request, api_version, work)


async def apply_from_evaluation(request: Request, api_version: str | None = None) -> Response:
    """Explore as a policy of a succeeded evaluation (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        body = await read_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("evaluationId"), str):
            raise InvalidRequest("evaluationId: the evaluation's id is required", "evaluationId")
        job = jobs(request).get(runtime.name, ev.KIND, body["evaluationId"])
        settings = ev.applied_settings(job, str(body.get("policyName")))
        model = conf.ranking_model(runtime.learner, runtime.name)
        conf.check_explorer(model, settings, "policyName")
        await _change(runtime, _set_explorer(settings))
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


ROUTES: list[tuple[str, str, Endpoint, int]] = [
    ("GET", "/configurations/service", get_service_configuration, 200),
    ("PUT", "/configurations/service", update_service_configuration, 200),
    ("GET", "/configurations/policy", get_policy, 200),
    ("PUT", "/configurations/policy", update_policy, 200),
    ("DELETE", "/configurations/policy", reset_policy, 200),
    ("POST", "/configurations/applyFromEvaluation", apply_from_evaluation, 204),
]
