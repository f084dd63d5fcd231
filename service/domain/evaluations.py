"""Candidate configurations estimated on a model's own log, as background jobs.

An evaluation reads the model's newest answered decisions (up to ``rows`` log entries),
completes each candidate (the model's configuration with the candidate's changes;
``current`` is the configuration unchanged) and runs
:func:`banditree.evaluation.evaluate_candidates` in a child process
(:mod:`service.domain.evaluation_worker`) while a job of :mod:`service.domain.jobs`
follows it, the job's :class:`~service.domain.jobs.Progress` row by row.  The result is the report of ``banditree evaluate`` (estimates with
bootstrap intervals, the support refusals) without its file paths.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from banditree.evaluation import CandidateOptions
from banditree.learners import LearnerConfig
from banditree.logs import table_from_rows
from service.domain.errors import InvalidRequest, Unavailable
from service.domain.evaluation_worker import evaluate_apart
from service.domain.jobs import Job, Progress
from service.domain.runtime import ModelRuntime
from service.domain.runtime.replay import entry_row
from service.store import StoreUnavailable

#: the job kind (:class:`service.domain.jobs.Jobs`)
KIND = "evaluation"
#: the candidate every evaluation holds: the model's configuration as served
CURRENT = "current"
#: fewest answered decisions an evaluation splits into training and evaluation rows
MIN_ROWS = 20
#: log entries read from the store per round trip
PAGE_ENTRIES = 1_000


def candidate_configs(
    runtime: ModelRuntime, candidates: list[tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """``current`` and each candidate's configuration; :class:`InvalidRequest` naming the
    candidate and the field when a change is not a valid configuration."""
    learner = runtime.learner
    if learner.task != "classification":
        raise InvalidRequest(
            f"candidates: evaluations replay a classification model's log; "
            f"model {runtime.name!r} is a {learner.task} model",
            "candidates",
        )
    base = {k: v for k, v in learner.config().items() if v is not None}
    configs = {CURRENT: base}
    for i, (name, changes) in enumerate(candidates):
        where = f"candidates[{i}]"
        if name in configs:
            raise InvalidRequest(f"{where}.name: {name!r} is used twice (or is {CURRENT!r})", where)
        for key in ("task", "kind"):
            if key in changes and changes[key] != base.get(key):
                raise InvalidRequest(
                    f"{where}.changes.{key}: the candidate replays this model's log with "
                    f"its {key} ({base.get(key)!r}); create another model to try a {key}",
                    f"{where}.changes.{key}",
                )
        merged = {**base, **changes}
        try:
            LearnerConfig.from_stored(merged)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "changes"
            raise InvalidRequest(
                f"{where}.changes.{field}: {first['msg']}", f"{where}.changes.{field}"
            ) from None
        configs[name] = merged
    return configs


async def recent_rows(runtime: ModelRuntime, entries: int) -> list[dict[str, Any]]:
    """The answered decisions among the newest ``entries`` log entries, oldest first."""
    try:
        bounds = await runtime.store.log_bounds(runtime.name)
        after = max(bounds.first - 1, bounds.last - entries, 0)
        rows: list[dict[str, Any]] = []
        while True:
            page = await runtime.store.read_log(runtime.name, after=after, limit=PAGE_ENTRIES)
            for entry in page:
                row = entry_row(entry, runtime.uid, runtime.policy.default_loss)
                if row is not None:
                    rows.append(row)
            if len(page) < PAGE_ENTRIES:
                return rows
            after = page[-1].offset
    except StoreUnavailable as err:
        raise Unavailable(f"the log cannot be read now: {err}") from None


async def run_evaluation(
    runtime: ModelRuntime, request: dict[str, Any], progress: Progress
) -> dict[str, Any]:
    """The evaluation's report: the log's shape, the logged policy's value, each candidate's
    estimates (:func:`banditree.evaluation.evaluate_candidates`)."""
    version = runtime.learner.version
    progress.begin("reading the log", request["rows"])
    rows = await recent_rows(runtime, request["rows"])
    progress.done = len(rows)
    if len(rows) < MIN_ROWS:
        raise ValueError(
            f"the log holds {len(rows)} answered decisions; an evaluation needs at least "
            f"{MIN_ROWS} (send traffic and feedback first)"
        )
    table = table_from_rows(runtime.name, rows)
    configs = request["configs"]
    if table.named:  # the features are declared, or inferred from the log as served
        for config in configs.values():
            if config.get("features") is None:
                config.pop("n_features", None)
    options = CandidateOptions(
        train_fraction=request["train_fraction"], n_bootstrap=request["n_bootstrap"]
    )

    try:
        found = await evaluate_apart(table, configs, options, progress)
    except ImportError as err:  # the doubly robust reward model's scikit-learn
        raise ValueError(
            f"{err.name or 'a package'} is not installed: the doubly robust estimate "
            "needs the sim extra (pip install 'banditree[sim]')"
        ) from None
    progress.stage = "done"
    return {"model_version": version, **found}


def evaluation_body(job: Job, *, full: bool = True) -> dict[str, Any]:
    """The public form of an evaluation job (``result`` only when ``full`` and done)."""
    request = job.request
    body: dict[str, Any] = {
        "id": job.id,
        "status": job.status,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "progress": None if job.progress is None else job.progress.public(),
        "request": {k: v for k, v in request.items() if k != "configs"},
        "error": job.error,
    }
    if full:
        body["result"] = job.result if job.status == "succeeded" else None
    return body
