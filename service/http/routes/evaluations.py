"""Candidate evaluations on a model's own log (``/v1/models/{name}/evaluations``).

``POST`` starts one as a background job (admin: it replays the log once per candidate
on the service's CPU) and answers 202 with its ``Location``; ``GET .../{id}`` reads
its progress while it runs and its report once done; ``DELETE`` stops and forgets it.
Jobs live in the process that runs them (:mod:`service.domain.jobs`).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from service.domain import evaluations as ev
from service.domain.jobs import Jobs, Progress
from service.domain.schemas import MAX_OPTIONS_BYTES
from service.http.deps import MODEL_NAME_PATTERN, RuntimeDep
from service.http.errors import ServiceError

router = APIRouter(prefix="/v1/models", tags=["evaluations"])

#: most candidates of one evaluation (``current`` is added to them)
MAX_CANDIDATES = 8
#: most log entries one evaluation reads (the newest)
MAX_ROWS = 100_000
#: most bootstrap resamples of each interval
MAX_BOOTSTRAP = 2_000
JobId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class CandidateChanges(BaseModel):
    """One candidate: a name and the configuration fields it changes."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(pattern=MODEL_NAME_PATTERN, description="shown in the report")
    changes: dict[str, Any] = Field(
        default_factory=dict,
        max_length=64,
        description="learner configuration fields set over the model's own",
    )


class EvaluationCreate(BaseModel):
    """Body of ``POST /v1/models/{name}/evaluations``."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    candidates: list[CandidateChanges] = Field(
        default_factory=list,
        max_length=MAX_CANDIDATES,
        description="besides 'current' (the configuration as served)",
    )
    rows: int = Field(10_000, ge=ev.MIN_ROWS, le=MAX_ROWS, description="newest log entries read")
    train_fraction: float = Field(0.7, gt=0, lt=1, description="the head the candidates learn")
    n_bootstrap: int = Field(200, ge=10, le=MAX_BOOTSTRAP, description="resamples per interval")


class EvaluationPublic(BaseModel):
    """An evaluation job: its status, progress and, once succeeded, its report."""

    id: str
    status: str = Field(description="running, succeeded or failed")
    created_at: float
    finished_at: float | None
    progress: dict[str, Any] | None = Field(description="stage, done, total, fraction")
    request: dict[str, Any]
    error: str | None
    result: dict[str, Any] | None = Field(
        None, description="log, logged_policy, candidates (as banditree evaluate's report)"
    )


class EvaluationList(BaseModel):
    evaluations: list[EvaluationPublic]


def _jobs(request: Request) -> Jobs:
    found: Jobs = request.app.state.jobs
    return found


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    data = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
    return Response(data, status_code=status, media_type="application/json", headers=headers)


@router.post(
    "/{name}/evaluations",
    status_code=202,
    response_model=EvaluationPublic,
    response_class=Response,
)
async def start_evaluation(
    body: EvaluationCreate, runtime: RuntimeDep, request: Request
) -> Response:
    """Start estimating the candidates on the model's newest log rows (202, ``Location``)."""
    size = len(orjson.dumps([c.changes for c in body.candidates]))
    if size > MAX_OPTIONS_BYTES * MAX_CANDIDATES:
        raise ServiceError(422, f"candidates: {size} bytes of JSON is too large", "candidates")
    configs = ev.candidate_configs(runtime, [(c.name, c.changes) for c in body.candidates])
    checked = {
        "candidates": [{"name": c.name, "changes": c.changes} for c in body.candidates],
        "rows": body.rows,
        "train_fraction": body.train_fraction,
        "n_bootstrap": body.n_bootstrap,
        "configs": configs,
    }
    progress = Progress()
    job = _jobs(request).start(
        runtime.name,
        ev.KIND,
        uuid.uuid4().hex,
        checked,
        lambda: ev.run_evaluation(runtime, checked, progress),
        progress=progress,
    )
    location = f"{request.url.path.rstrip('/')}/{job.id}"
    return _json(ev.evaluation_body(job), 202, {"Location": location})


@router.get("/{name}/evaluations", response_model=EvaluationList, response_class=Response)
async def list_evaluations(runtime: RuntimeDep, request: Request) -> Response:
    """The model's evaluations held by this process, oldest first (without their reports)."""
    held = _jobs(request).list(runtime.name, ev.KIND)
    return _json({"evaluations": [ev.evaluation_body(j, full=False) for j in held]})


@router.get(
    "/{name}/evaluations/{evaluation_id}",
    response_model=EvaluationPublic,
    response_class=Response,
)
async def get_evaluation(evaluation_id: JobId, runtime: RuntimeDep, request: Request) -> Response:
    """The evaluation's status and progress; its report once it succeeded."""
    return _json(ev.evaluation_body(_jobs(request).get(runtime.name, ev.KIND, evaluation_id)))


@router.delete("/{name}/evaluations/{evaluation_id}", status_code=204)
async def delete_evaluation(
    evaluation_id: JobId, runtime: RuntimeDep, request: Request
) -> Response:
    """Stop the evaluation if it runs, and forget it (204)."""
    _jobs(request).delete(runtime.name, ev.KIND, evaluation_id)
    return Response(status_code=204)
