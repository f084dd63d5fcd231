"""Candidate evaluations on a model's own log: a background job with progress and a report."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from service.domain.errors import NotFound
from service.domain.jobs import Jobs, Progress
from tests.service.http.one_model import one_model_client

pytestmark = pytest.mark.anyio
EPSILON = {"name": "eps", "changes": {"explorer": "epsilon_greedy", "explorer_parameter": 0.1}}


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with one_model_client(tmp_path) as client:
        yield client


async def feed(http: httpx.AsyncClient, rounds: int) -> None:
    """``rounds`` decisions, each answered: loss 0 when the action is ``x0 > 0.5``."""
    rng = np.random.default_rng(0)
    for _ in range(rounds // 50):
        contexts = rng.random((50, 3)).tolist()
        answer = (await http.post("/v1/models/m/predict", json={"contexts": contexts})).json()
        for x, d in zip(contexts, answer["decisions"], strict=True):
            loss = float(d["action"] != int(x[0] > 0.5))
            body = {"event_id": d["event_id"], "loss": loss}
            assert (await http.post("/v1/models/m/feedback", json=body)).status_code == 200


async def finished(http: httpx.AsyncClient, location: str) -> tuple[dict[str, Any], list[Any]]:
    """The evaluation once it is no longer running, and every progress seen meanwhile."""
    seen = []
    for _ in range(600):
        job: dict[str, Any] = (await http.get(location)).json()
        seen.append(job["progress"])
        if job["status"] != "running":
            return job, seen
        await asyncio.sleep(0.05)
    raise AssertionError(job)


async def test_an_evaluation_reports_each_candidate_and_replays_the_log_as_served(
    http: httpx.AsyncClient,
) -> None:
    await feed(http, 300)
    started = await http.post(
        "/v1/models/m/evaluations", json={"candidates": [EPSILON], "n_bootstrap": 50}
    )
    assert started.status_code == 202, started.text
    assert started.json()["status"] == "running" and started.json()["result"] is None
    location = started.headers["location"]
    assert location == f"/v1/models/m/evaluations/{started.json()['id']}"
    job, seen = await finished(http, location)
    assert job["status"] == "succeeded", job["error"]
    assert job["progress"] == {"stage": "done", "done": 600, "total": 600, "fraction": 1.0}
    assert all(p["done"] <= p["total"] or p["total"] == 0 for p in seen)
    report = job["result"]
    assert report["log"]["n_rows"] == 300 and report["log"]["n_train"] == 210
    assert set(report["candidates"]) == {"current", "eps"}
    eps = report["candidates"]["eps"]
    assert eps["config"]["explorer"] == "epsilon_greedy" and eps["config"]["height"] == 2
    # the served configuration replayed decides every row as it was decided live: each
    # importance weight is 1, so its progressive value is the log's own
    current = report["candidates"]["current"]
    assert current["progressive_rounds"] == pytest.approx(300)
    assert current["progressive_value"] == pytest.approx(
        report["logged_policy"]["progressive_value"], abs=1e-12
    )
    for entry in (current, eps):
        assert entry["supported"] and 0 <= entry["snips"] <= 1
        low, high = entry["snips_ci95"]
        assert low <= entry["snips"] <= high
    listed = (await http.get("/v1/models/m/evaluations")).json()["evaluations"]
    assert [e["id"] for e in listed] == [job["id"]] and "result" not in listed[0]
    assert (await http.delete(location)).status_code == 204
    assert (await http.get(location)).status_code == 404


@pytest.mark.parametrize(
    ("candidates", "field"),
    [
        ([{"name": "x", "changes": {"height": 0}}], "candidates[0].changes.height"),
        ([{"name": "x", "changes": {"kind": "linear"}}], "candidates[0].changes.kind"),
        ([EPSILON, EPSILON], "candidates[1]"),
        ([{"name": "current", "changes": {}}], "candidates[0]"),
        ([{"name": "x", "changes": {}, "extra": 1}], "candidates.0.extra"),
    ],
)
async def test_a_bad_candidate_is_refused_naming_it(
    http: httpx.AsyncClient, candidates: list[dict[str, Any]], field: str
) -> None:
    answer = await http.post("/v1/models/m/evaluations", json={"candidates": candidates})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert (await http.get("/v1/models/m/evaluations")).json() == {"evaluations": []}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rows": 5}, "rows"),
        ({"train_fraction": 1.0}, "train_fraction"),
        ({"n_bootstrap": 9}, "n_bootstrap"),
    ],
)
async def test_options_out_of_bounds_are_refused(
    http: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    answer = await http.post("/v1/models/m/evaluations", json=body)
    assert answer.status_code == 422 and answer.json()["field"] == field


async def test_a_log_too_short_fails_the_job_saying_why(http: httpx.AsyncClient) -> None:
    await feed(http, 0)
    started = await http.post("/v1/models/m/evaluations", json={})
    job, _ = await finished(http, started.headers["location"])
    assert job["status"] == "failed" and job["result"] is None
    assert "0 answered decisions" in job["error"] and "at least 20" in job["error"]


async def test_a_regression_model_is_refused(http: httpx.AsyncClient) -> None:
    body = {"task": "regression", "n_features": 2}
    assert (await http.put("/v1/models/r", json=body)).status_code == 201
    answer = await http.post("/v1/models/r/evaluations", json={})
    assert answer.status_code == 422 and "classification" in answer.json()["detail"]


async def test_a_deleted_job_stops_its_worker_at_the_next_step() -> None:
    jobs, progress, stopped = Jobs(), Progress(), threading.Event()

    def worker() -> None:
        try:
            progress.begin("counting", 10**9)
            while True:
                progress.step()
        finally:
            stopped.set()

    job = jobs.start("m", "evaluation", "j", {}, lambda: asyncio.to_thread(worker), progress)
    for _ in range(200):
        if progress.done > 0:
            break
        await asyncio.sleep(0.01)
    assert job.status == "running" and 0 < progress.public()["fraction"] < 1
    jobs.delete("m", "evaluation", "j")
    assert await asyncio.to_thread(stopped.wait, 5.0)
    with pytest.raises(NotFound):
        jobs.get("m", "evaluation", "j")
    await jobs.close()
