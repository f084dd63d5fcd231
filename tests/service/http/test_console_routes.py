"""The routes the console reads: per-leaf statistics, a context's trace, the key's roles,
the model's status, the log's newest rows, and the console's files at ``/ui``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import pytest

from service.main import create_app
from service.settings import load_settings
from tests.service.http.one_model import MODEL, one_model_client

pytestmark = pytest.mark.anyio


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with one_model_client(tmp_path) as client:
        yield client


async def feed(http: httpx.AsyncClient, contexts: list[list[float]]) -> dict[str, Any]:
    """Decide and give a loss for each context; the model once every loss is served."""
    answer = await http.post("/v1/models/m/predict", json={"contexts": contexts})
    for d in answer.json()["decisions"]:
        sent = await http.post(
            "/v1/models/m/feedback", json={"event_id": d["event_id"], "loss": float(d["action"])}
        )
        assert sent.status_code == 200, sent.text
    for _ in range(400):
        model: dict[str, Any] = (await http.get("/v1/models/m")).json()
        if model["counters"]["feedback"] >= len(contexts) and model["pending_updates"] == 0:
            return model
        await asyncio.sleep(0.02)
    raise AssertionError(model)


async def test_leaves_count_every_feedback_learned(http: httpx.AsyncClient) -> None:
    await feed(http, [[float(i % 5), float(i % 3) - 1.0, 0.5 * i] for i in range(40)])
    answer = (await http.get("/v1/models/m/leaves")).json()
    tree = answer["leaf_stats"]["trees"][0]
    assert tree["decisions"] == 40 and len(tree["leaves"]) == 4
    assert sum(sum(leaf["action_counts"]) for leaf in tree["leaves"]) == 40
    assert sum(leaf["feedbacks"] for leaf in tree["leaves"]) == 40
    assert len(answer["probabilities"][0]) == 4
    assert len(answer["scaling"]["mean"]) == 3


async def test_trace_agrees_with_predict_and_decides_nothing(http: httpx.AsyncClient) -> None:
    await feed(http, [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]] * 5)
    before = (await http.get("/v1/models/m")).json()["counters"]["predictions"]
    context = [0.3, -0.2, 1.0]
    traced = (await http.post("/v1/models/m/trace", json={"context": context})).json()
    assert (await http.get("/v1/models/m")).json()["counters"]["predictions"] == before
    decision = (await http.post("/v1/models/m/predict", json={"context": context})).json()
    (trace,) = traced["traces"]
    assert trace["decision"]["greedy_action"] == decision["greedy_action"]
    assert trace["trees"][0]["leaf"] == decision["leaf"]
    assert trace["trees"][0]["path"][-1] == 3 + decision["leaf"]  # the 3 inner nodes come first
    assert trace["decision"]["probabilities"][decision["action"]] == pytest.approx(
        decision["probability"]
    )
    many = (
        await http.post("/v1/models/m/trace", json={"contexts": [context, [0.0, 0.0, 0.0]]})
    ).json()
    assert len(many["traces"]) == 2 and many["traces"][0] == trace


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"context": [1.0, 2.0]}, 422, "context"),  # 2 numbers for a model of 3
        ({"context": [1.0, 2.0, 3.0], "contexts": [[1.0, 2.0, 3.0]]}, 422, "context"),
        ({}, 422, "context"),
        ({"contexts": [[1.0, 2.0, 3.0]] * 300}, 413, "contexts"),  # over max_batch
    ],
)
async def test_trace_refuses_bad_bodies_naming_the_field(
    http: httpx.AsyncClient, body: dict[str, Any], status: int, field: str
) -> None:
    answer = await http.post("/v1/models/m/trace", json=body)
    assert answer.status_code == status, answer.text
    assert answer.json()["field"] == field


async def test_the_open_service_grants_every_role(http: httpx.AsyncClient) -> None:
    answer = (await http.get("/v1/whoami")).json()
    assert answer == {"roles": ["admin", "predict", "read"], "models": None, "open": True}


async def test_model_status_and_the_logs_newest_rows(http: httpx.AsyncClient) -> None:
    model = await feed(http, [[float(i), 0.0, 1.0] for i in range(12)])
    assert set(model["status"]) == {"pending_decisions", "checkpoint_age_seconds", "learner_holder"}
    newest = [
        orjson.loads(x) for x in (await http.get("/v1/models/m/log?last=5")).text.splitlines()
    ]
    every = [orjson.loads(x) for x in (await http.get("/v1/models/m/log")).text.splitlines()]
    assert len(every) == 12 and newest == every[-5:]
    assert (await http.get("/v1/models/m/log?last=0")).status_code == 422


async def test_the_console_is_served_from_the_package(http: httpx.AsyncClient) -> None:
    assert (await http.get("/ui")).headers["location"] == "/ui/"
    page = await http.get("/ui/")
    assert page.status_code == 200 and "<title>banditree console</title>" in page.text
    script = await http.get("/ui/js/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere


async def test_summary_list_cuts_the_config_to_kind_and_task(http: httpx.AsyncClient) -> None:
    full = (await http.get("/v1/models")).json()["models"][0]
    answer = await http.get("/v1/models", params={"view": "summary"})
    assert answer.status_code == 200, answer.text
    summary = answer.json()["models"][0]
    assert summary["config"] == {"kind": "dgt", "task": full["config"]["task"]}
    assert len(full["config"]) > 2  # the full view keeps every setting
    assert {k: v for k, v in summary.items() if k not in ("config", "status")} == {
        k: v for k, v in full.items() if k not in ("config", "status")
    }
    assert len(answer.content) < len((await http.get("/v1/models")).content)


async def test_unknown_list_view_is_a_422_naming_the_field(http: httpx.AsyncClient) -> None:
    answer = await http.get("/v1/models", params={"view": "tiny"})
    assert answer.status_code == 422
    assert "view" in answer.text


async def test_a_checkpoints_tree_is_the_model_as_it_was(http: httpx.AsyncClient) -> None:
    first = (await http.post("/v1/models/m/checkpoints")).json()
    then = (await http.get("/v1/models/m/tree")).json()
    await feed(http, [[float(i % 3), 1.0, -1.0] for i in range(40)])
    now = (await http.get("/v1/models/m/tree")).json()
    assert now["version"] > then["version"]
    answer = await http.get(f"/v1/models/m/checkpoints/{first['sequence']}/tree")
    assert answer.status_code == 200, answer.text
    assert answer.json() == then


async def test_a_missing_checkpoint_is_a_404_naming_the_sequence(http: httpx.AsyncClient) -> None:
    answer = await http.get("/v1/models/m/checkpoints/987654/tree")
    assert answer.status_code == 404
    assert "987654" in answer.text and "sequence" in answer.text
    assert (await http.get("/v1/models/m/checkpoints/-1/tree")).status_code == 422


async def test_drift_names_the_feedback_that_set_each_signal_off(http: httpx.AsyncClient) -> None:
    assert (await http.get("/v1/models/m/drift")).json() == {
        "version": 0,
        "signals": 0,
        "events": [],
    }
    rng = np.random.default_rng(0)
    rising: list[str] = []
    for loss in [0.0] * 300 + [1.0] * 100:  # right for 300 rounds, then always wrong
        context = rng.normal(size=3).tolist()
        decision = (await http.post("/v1/models/m/predict", json={"context": context})).json()
        if loss:
            rising.append(decision["event_id"])
        body = {"event_id": decision["event_id"], "loss": loss}
        assert (await http.post("/v1/models/m/feedback", json=body)).status_code == 200
    for _ in range(400):
        model = (await http.get("/v1/models/m")).json()
        if model["counters"]["feedback"] >= 400 and model["pending_updates"] == 0:
            break
        await asyncio.sleep(0.02)
    answer = (await http.get("/v1/models/m/drift")).json()
    assert answer["signals"] == 1
    (event,) = answer["events"]
    assert event["event_id"] in rising[:60]  # seen within 60 rounds of the rise
    assert event["feedback"] == 301 + rising.index(event["event_id"])
    rows = [orjson.loads(line) for line in (await http.get("/v1/models/m/log")).text.splitlines()]
    (row,) = [r for r in rows if r["event_id"] == event["event_id"]]
    assert row["loss"] == 1.0  # the console marks the signal at this row's offset


async def test_series_gives_each_models_recent_rates_and_loss(tmp_path: Path) -> None:
    app = create_app(load_settings(data_dir=tmp_path, snapshot_poll_seconds=0.05))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            assert (await http.put("/v1/models/m", json=MODEL)).status_code == 201
            series, runtimes = app.state.series, app.state.registry.runtimes
            series.sample(runtimes, 1000.0)
            assert (await http.get("/v1/series")).json()["models"] == {}  # one sample
            model = await feed(http, [[float(i % 5), 1.0, 0.5 * i] for i in range(40)])
            series.sample(runtimes, 1010.0)
            answer = (await http.get("/v1/series")).json()
    assert answer["sample_seconds"] == 5.0
    figures = answer["models"]["m"]
    assert figures["seconds"] == 10.0
    assert figures["decisions_per_second"] == pytest.approx(4.0)
    assert figures["feedback_per_second"] == pytest.approx(4.0)
    assert figures["window_loss"] == pytest.approx(model["counters"]["progressive_mean_loss"])
    assert figures["loss_trend"] == [pytest.approx(figures["window_loss"])]
