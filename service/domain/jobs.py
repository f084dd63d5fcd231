"""Background jobs of a model (offline evaluations, feature importances): one job system.

A job runs a computation over a model (its log, its served learner) off the event loop
and keeps its answer for the caller to read; a job given a :class:`Progress` reports
how far it is while it runs, and stops at its next step when it is deleted.  Jobs are held by the process that runs
them, in memory: a restart forgets them, and with several serving processes a job is
read back from the process that took it.  At most :data:`MAX_JOBS` per model and kind
are kept (the oldest finished one is dropped for a new one); at most
:data:`MAX_RUNNING` run at once in the process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from service.domain.errors import Conflict, NotFound

log = logging.getLogger(__name__)

#: jobs kept per model and kind
MAX_JOBS = 100
#: jobs running at once in one process (the others wait for a place)
MAX_RUNNING = 2


class JobCancelled(Exception):
    """Raised in a job's worker at its next step once the job is deleted."""


@dataclass
class Progress:
    """How far a running job is: ``done`` of ``total`` steps of its ``stage``.

    The job's worker thread writes it (plain attribute stores); the event loop reads it.
    """

    stage: str = "queued"
    done: int = 0
    total: int = 0
    cancelled: bool = False

    def step(self, count: int = 1) -> None:
        """``count`` more steps done; :class:`JobCancelled` once the job is deleted."""
        if self.cancelled:
            raise JobCancelled("deleted while it ran")
        self.done += count

    def begin(self, stage: str, total: int) -> None:
        """A new stage of ``total`` steps."""
        if self.cancelled:
            raise JobCancelled("deleted while it ran")
        self.stage, self.done, self.total = stage, 0, total

    def public(self) -> dict[str, Any]:
        """``stage``, ``done``, ``total`` and ``fraction`` (null while the total is unknown)."""
        fraction = min(self.done / self.total, 1.0) if self.total > 0 else None
        return {"stage": self.stage, "done": self.done, "total": self.total, "fraction": fraction}


@dataclass
class Job:
    """One background job: what was asked, its state and, once done, its result."""

    model: str
    kind: str
    id: str
    request: dict[str, Any]
    created_at: float = field(default_factory=time.time)
    status: str = "running"  # running, succeeded or failed
    result: Any = None
    error: str | None = None
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None
    progress: Progress | None = None

    def cancel(self) -> None:
        """Stop the job: its task is cancelled and its worker stops at its next step."""
        if self.progress is not None:
            self.progress.cancelled = True
        if self.task is not None and not self.task.done():
            self.task.cancel()


class Jobs:
    """The jobs of every model this process serves, by (model, kind, id)."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[str, str, str], Job] = {}
        self._slots = asyncio.Semaphore(MAX_RUNNING)

    def start(
        self,
        model: str,
        kind: str,
        job_id: str,
        request: dict[str, Any],
        work: Callable[[], Awaitable[Any]],
        progress: Progress | None = None,
    ) -> Job:
        """Start ``work`` as job ``job_id``; :class:`Conflict` when the id is taken.

        ``progress``, when given, is the one ``work`` advances (read back with the job).
        """
        key = (model, kind, job_id)
        if key in self._jobs:
            raise Conflict(f"a {kind} with id {job_id!r} exists already", "id")
        self._make_room(model, kind)
        job = Job(model, kind, job_id, request, progress=progress)
        self._jobs[key] = job
        job.task = asyncio.create_task(self._run(job, work))
        return job

    async def _run(self, job: Job, work: Callable[[], Awaitable[Any]]) -> None:
        try:
            async with self._slots:
                if job.progress is not None:
                    job.progress.stage = "running"
                job.result = await work()
            job.status = "succeeded"
        except asyncio.CancelledError:
            job.status, job.error = "failed", "deleted while it ran"
            raise
        except Exception as err:  # the job's answer says why; the service goes on
            log.warning("%s %s of model %s failed: %s", job.kind, job.id, job.model, err)
            job.status, job.error = "failed", str(err) or type(err).__name__
        finally:
            job.finished_at = time.time()

    def _make_room(self, model: str, kind: str) -> None:
        held = [j for j in self._jobs.values() if j.model == model and j.kind == kind]
        if len(held) < MAX_JOBS:
            return
        finished = [j for j in held if j.status != "running"]
        if not finished:
            raise Conflict(f"{MAX_JOBS} {kind} jobs of this model are running; wait", "id")
        oldest = min(finished, key=lambda j: j.created_at)
        del self._jobs[model, kind, oldest.id]

    def get(self, model: str, kind: str, job_id: str) -> Job:
        """The job, or :class:`NotFound`."""
        job = self._jobs.get((model, kind, job_id))
        if job is None:
            raise NotFound(f"no {kind} with id {job_id!r} for model {model!r}", "id")
        return job

    def list(self, model: str, kind: str) -> list[Job]:
        """The model's jobs of ``kind``, oldest first."""
        held = [j for j in self._jobs.values() if j.model == model and j.kind == kind]
        return sorted(held, key=lambda j: j.created_at)

    def delete(self, model: str, kind: str, job_id: str) -> None:
        """Forget the job (cancelled when it runs); :class:`NotFound` when there is none."""
        job = self.get(model, kind, job_id)
        del self._jobs[model, kind, job_id]
        job.cancel()

    def forget_model(self, model: str) -> None:
        """Drop every job of ``model`` (deleted or reset)."""
        for key in [k for k in self._jobs if k[0] == model]:
            self._jobs.pop(key).cancel()

    async def close(self) -> None:
        """Cancel the running jobs and wait for them (at shutdown)."""
        tasks = [j.task for j in self._jobs.values() if j.task is not None and not j.task.done()]
        for job in self._jobs.values():
            job.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
