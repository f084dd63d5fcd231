"""Personalizer's offline evaluations and feature importances as background jobs.

An evaluation replays the model's own log rows acknowledged between its ``startTime``
and ``endTime`` through :func:`banditree.ranking.evaluate.evaluate_ranking` once per
policy: the model's current explorer (``Online``), each policy of the request
(``Custom``, VW arguments as in :mod:`banditree.ranking.vw_policy`) and, with
``enablePolicyOptimization``, a few banditree explorers (``OfflineExperimentation``);
each one's expected reward is its SNIPS estimate with a 95 % bootstrap interval, and the
best is the ``optimalPolicy``.  A feature importance runs
:func:`banditree.ranking.importance.feature_importance` over the served model and the
rows of its time range.  Both run in a worker thread (:mod:`service.domain.jobs`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from banditree.ranking.evaluate import evaluate_ranking
from banditree.ranking.importance import feature_importance
from banditree.ranking.vw_policy import (
    ExplorerSettings,
    parse_policy_arguments,
    policy_arguments,
)
from service.domain.errors import InvalidRequest
from service.domain.jobs import Job
from service.domain.personalizer.configuration import policy_settings, ranking_model
from service.domain.personalizer.model_files import log_rows
from service.domain.personalizer.times import iso_time, parse_time
from service.domain.runtime import ModelRuntime

#: the job kinds (:class:`service.domain.jobs.Jobs`)
KIND, IMPORTANCE_KIND = "evaluation", "featureImportance"
#: most log rows one job reads (the newest of its time range)
MAX_ROWS = 20_000
#: bootstrap resamples of an evaluation's intervals
N_BOOTSTRAP = 200
#: explorers tried by an evaluation with ``enablePolicyOptimization``
EXPERIMENTS = (
    ExplorerSettings("epsilon_greedy", 0.05),
    ExplorerSettings("epsilon_greedy", 0.2),
    ExplorerSettings("squarecb"),
    ExplorerSettings("fastcb"),
)
EVALUATION_FIELDS = frozenset(
    {"name", "startTime", "endTime", "policies", "enablePolicyOptimization",
     "enableOfflineExperimentation"}
)  # fmt: skip
IMPORTANCE_FIELDS = frozenset({"name", "startTime", "endTime"})


def _window(body: Any, fields: frozenset[str]) -> tuple[str, float, float]:
    if not isinstance(body, dict):
        raise InvalidRequest("body: a JSON object is required", "body")
    unknown = sorted(set(body) - fields)
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: not a field of this request", unknown[0])
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequest("name: a non-empty string is required", "name")
    start, end = (
        parse_time(body.get("startTime"), "startTime"),
        parse_time(body.get("endTime"), "endTime"),
    )
    if end <= start:
        raise InvalidRequest("endTime: must be after startTime", "endTime")
    return name, start, end


def evaluation_request(body: Any) -> dict[str, Any]:
    """The checked request of an evaluation: name, window and the policies to evaluate."""
    name, start, end = _window(body, EVALUATION_FIELDS)
    policies = body.get("policies") or []
    if not isinstance(policies, list):
        raise InvalidRequest("policies: a list of {name, arguments} is required", "policies")
    checked = []
    for i, policy in enumerate(policies):
        try:
            settings = policy_settings(policy)
        except InvalidRequest as err:
            raise InvalidRequest(f"policies[{i}].{err.detail}", f"policies[{i}]") from None
        label = policy.get("name") or f"policy {i}"
        checked.append((str(label), settings))
    optimize = bool(
        body.get("enablePolicyOptimization") or body.get("enableOfflineExperimentation")
    )
    return {"name": name, "start": start, "end": end, "policies": checked, "optimize": optimize}


async def run_evaluation(runtime: ModelRuntime, request: dict[str, Any]) -> dict[str, Any]:
    """The evaluation's results: one entry per policy, and the best one's name."""
    model = ranking_model(runtime.learner, runtime.name)
    rows = await log_rows(runtime, start=request["start"], end=request["end"], limit=MAX_ROWS)
    config = model.config()
    candidates = [("Online", "Online", ExplorerSettings(*model.explorer_settings))]
    candidates += [(label, "Custom", s) for label, s in request["policies"]]
    if request["optimize"]:
        tried = {c[2] for c in candidates}
        candidates += [
            (f"banditree {s.explorer} {s.parameter if s.parameter is not None else ''}".strip(),
             "OfflineExperimentation", s)
            for s in EXPERIMENTS if s not in tried
        ]  # fmt: skip

    def evaluate() -> dict[str, Any]:
        results = []
        for label, source, settings in candidates:
            explored = {**config, "explorer": settings.explorer,
                        "explorer_parameter": settings.parameter,
                        "explorer_exponent": settings.exponent}  # fmt: skip
            try:
                found = evaluate_ranking(rows, explored, n_bootstrap=N_BOOTSTRAP)
            except ValueError as err:
                raise ValueError(f"{len(rows)} log rows in the time range: {err}") from None
            snips = found["policy"]["snips"]
            results.append({
                "name": label, "arguments": policy_arguments(settings), "policySource": source,
                "slotId": "", "summary": {"expectedReward": snips["value"],
                                          "confidenceInterval": snips["value_ci95"]},
                "rows": found["n_evaluation"], "loggedReward": found["logged_policy"]["value"],
            })  # fmt: skip
        return {"value": results, "optimalPolicy": max(
            results, key=lambda r: r["summary"]["expectedReward"])["name"]}  # fmt: skip

    return await asyncio.to_thread(evaluate)


def evaluation_body(job: Job, *, lower_case: bool, full: bool = True) -> dict[str, Any]:
    """Personalizer's evaluation: 2022-09-01-preview's fields (``content``) and
    v1.1-preview's (``policyResults``, ``jobId``), the status in the version's words."""
    request = job.request
    statuses = {"running": "Running", "succeeded": "Succeeded", "failed": "Failed"}
    if lower_case:
        statuses = {"running": "pending", "succeeded": "completed", "failed": "failed"}
    body: dict[str, Any] = {
        "id": job.id, "jobId": job.id, "name": request["name"],
        "startTime": iso_time(request["start"]), "endTime": iso_time(request["end"]),
        "status": statuses[job.status], "evaluationType": "Manual",
        "creationTime": iso_time(job.created_at),
    }  # fmt: skip
    if job.error is not None:
        body["description"] = job.error
    if full and job.status == "succeeded":
        result = job.result
        body["optimalPolicy"] = result["optimalPolicy"]
        body["content"] = {
            "startTime": body["startTime"], "endTime": body["endTime"],
            "value": [{**r, "timeseries": {"data": []}} for r in result["value"]],
        }  # fmt: skip
        body["policyResults"] = [
            {"name": r["name"], "arguments": r["arguments"], "policySource": r["policySource"],
             "totalSummary": {"averageReward": r["summary"]["expectedReward"],
                              "confidenceInterval": r["summary"]["confidenceInterval"]}}
            for r in result["value"]
        ]  # fmt: skip
    return body


def applied_settings(job: Job, policy_name: str) -> ExplorerSettings:
    """The explorer of the evaluated policy ``policy_name`` (400 when the evaluation has not
    succeeded or holds no such policy)."""
    if job.status != "succeeded":
        raise InvalidRequest(
            f"evaluationId: evaluation {job.id!r} is {job.status}, not succeeded", "evaluationId"
        )
    names = [r["name"] for r in job.result["value"]]
    for r in job.result["value"]:
        if r["name"] == policy_name:
            return parse_policy_arguments(r["arguments"])
    raise InvalidRequest(f"policyName: {policy_name!r} is not one of {names}", "policyName")


def importance_request(body: Any) -> dict[str, Any]:
    """The checked request of a feature importance: its name and time window."""
    name, start, end = _window(body, IMPORTANCE_FIELDS)
    return {"name": name, "start": start, "end": end}


async def run_importance(runtime: ModelRuntime, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Personalizer's ``featureScores`` of the served model over the window's rows."""
    model = ranking_model(runtime.learner, runtime.name)
    rows = await log_rows(runtime, start=request["start"], end=request["end"], limit=MAX_ROWS)
    scores = await asyncio.to_thread(feature_importance, model, rows)
    return [
        {"namespace": s.namespace or s.side, "featureName": s.feature, "score": s.score}
        for s in scores
    ]


def importance_body(job: Job, *, full: bool = True) -> dict[str, Any]:
    """Personalizer's feature importance."""
    request = job.request
    statuses = {"running": "Running", "succeeded": "Succeeded", "failed": "Failed"}
    body: dict[str, Any] = {
        "id": job.id, "name": request["name"], "startTime": iso_time(request["start"]),
        "endTime": iso_time(request["end"]), "status": statuses[job.status],
        "creationTime": iso_time(job.created_at),
    }  # fmt: skip
    if job.error is not None:
        body["description"] = job.error
    if full and job.status == "succeeded":
        body["featureScores"] = job.result
    return body
