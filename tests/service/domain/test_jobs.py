"""The job system of evaluations and feature importances: results, failures, deletion."""

from __future__ import annotations

import asyncio

import pytest

from service.domain.errors import Conflict, NotFound
from service.domain.jobs import MAX_JOBS, Jobs


@pytest.mark.anyio
async def test_a_job_keeps_its_result_or_its_reason() -> None:
    jobs = Jobs()

    async def answer() -> int:
        return 42

    async def broken() -> int:
        raise ValueError("4 log rows are too few to split at 0.7")

    done = jobs.start("menu", "evaluation", "a", {"name": "a"}, answer)
    failed = jobs.start("menu", "evaluation", "b", {"name": "b"}, broken)
    assert done.status == "running"
    await asyncio.sleep(0.01)
    assert (done.status, done.result) == ("succeeded", 42)
    assert failed.status == "failed" and failed.error == "4 log rows are too few to split at 0.7"
    assert [j.id for j in jobs.list("menu", "evaluation")] == ["a", "b"]
    assert jobs.list("other", "evaluation") == [] and jobs.list("menu", "featureImportance") == []
    with pytest.raises(Conflict, match="'a' exists already"):
        jobs.start("menu", "evaluation", "a", {}, answer)
    await jobs.close()


@pytest.mark.anyio
async def test_deleting_a_running_job_cancels_it() -> None:
    jobs = Jobs()
    release = asyncio.Event()

    async def slow() -> None:
        await release.wait()

    job = jobs.start("menu", "evaluation", "slow", {}, slow)
    await asyncio.sleep(0)
    jobs.delete("menu", "evaluation", "slow")
    await asyncio.sleep(0.01)
    assert job.task is not None and job.task.cancelled()
    with pytest.raises(NotFound, match="no evaluation with id 'slow'"):
        jobs.get("menu", "evaluation", "slow")


@pytest.mark.anyio
async def test_the_oldest_finished_job_makes_room() -> None:
    jobs = Jobs()

    async def quick() -> None:
        return None

    for i in range(MAX_JOBS):
        jobs.start("menu", "evaluation", str(i), {}, quick)
    await asyncio.sleep(0.05)
    jobs.start("menu", "evaluation", "new", {}, quick)
    ids = [j.id for j in jobs.list("menu", "evaluation")]
    assert len(ids) == MAX_JOBS and "0" not in ids and ids[-1] == "new"
    await jobs.close()
