"""Predict under the caller's event ids (issue 41, item 6): a retry gets the stored
decision, counted once.

Before, a predict took no event id: a client that retried after a timeout made a
second decision and both were counted (the e2e learning test once counted 2,010
predictions for 2,000 rounds).  Each case runs through the fast front and through the
FastAPI route (a body with ``explain: false`` goes to the route).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio
MODEL = {"n_features": 2, "n_actions": 3}


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(load_settings(data_dir=tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            assert (await client.put("/v1/models/m", json=MODEL)).status_code == 201
            yield client


def _body(route: bool, **fields: Any) -> dict[str, Any]:
    return {**fields, "explain": False} if route else fields


async def _predictions(http: httpx.AsyncClient) -> int:
    return int((await http.get("/v1/models/m")).json()["counters"]["predictions"])


@pytest.mark.parametrize("route", [False, True], ids=["front", "route"])
async def test_a_repeated_predict_gets_the_stored_decision_counted_once(
    http: httpx.AsyncClient, route: bool
) -> None:
    body = _body(route, context=[0.3, -1.0], event_id="order-17:a")
    first = await http.post("/v1/models/m/predict", json=body)
    assert first.status_code == 200, first.text
    assert first.json()["event_id"] == "order-17:a"
    for _ in range(3):
        again = await http.post("/v1/models/m/predict", json=body)
        assert again.status_code == 200 and again.json() == first.json()
    assert await _predictions(http) == 1
    fed = await http.post("/v1/models/m/feedback", json={"event_id": "order-17:a", "loss": 0.2})
    assert fed.status_code == 200
    settled = await http.post("/v1/models/m/predict", json=body)  # its decision is used
    assert settled.status_code == 409 and settled.json()["field"] == "event_id"
    assert await _predictions(http) == 1


@pytest.mark.parametrize("route", [False, True], ids=["front", "route"])
async def test_a_repeated_batch_gets_its_stored_decisions_and_decides_the_new_ones(
    http: httpx.AsyncClient, route: bool
) -> None:
    contexts = [[0.1 * i, -0.2 * i] for i in range(5)]
    ids = [f"b-{i}" for i in range(5)]
    first = await http.post("/v1/models/m/predict", json=_body(route, contexts=contexts[:3],
                                                               event_ids=ids[:3]))  # fmt: skip
    assert first.status_code == 200, first.text
    again = await http.post("/v1/models/m/predict",
                            json=_body(route, contexts=contexts, event_ids=ids))  # fmt: skip
    assert again.status_code == 200, again.text
    rows = again.json()["decisions"]
    assert rows[:3] == first.json()["decisions"]  # stored ones as they were
    assert [r["event_id"] for r in rows] == ids
    assert await _predictions(http) == 5  # 3, then the 2 new ones


@pytest.mark.parametrize("route", [False, True], ids=["front", "route"])
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"context": [0.1, 0.2], "event_id": "has space"}, "event_id"),
        ({"context": [0.1, 0.2], "event_id": "x" * 101}, "event_id"),
        ({"context": [0.1, 0.2], "event_id": "slot#0"}, "event_id"),
        ({"context": [0.1, 0.2], "event_id": ""}, "event_id"),
        ({"contexts": [[0.1, 0.2]] * 2, "event_ids": ["a", "a/b"]}, "event_ids"),
        ({"contexts": [[0.1, 0.2]] * 2, "event_ids": ["a", "a"]}, "event_ids"),
        ({"contexts": [[0.1, 0.2]] * 2, "event_ids": ["a"]}, "event_ids"),
        ({"contexts": [[0.1, 0.2]] * 2, "event_id": "a"}, "event_id"),
    ],
)
async def test_a_bad_event_id_is_refused_naming_the_field(
    http: httpx.AsyncClient, route: bool, fields: dict[str, Any], field: str
) -> None:
    answer = await http.post("/v1/models/m/predict", json=_body(route, **fields))
    assert answer.status_code == 422, answer.text
    assert field in answer.text
    assert await _predictions(http) == 0


async def test_a_repeated_rank_gets_the_stored_ranking_until_rewarded(
    http: httpx.AsyncClient,
) -> None:
    """Rank takes the caller's event id already (Personalizer's ``eventId``): a repeat was
    refused (409); it is now answered with the stored ranking, counted once, and refused
    only once the decision was rewarded."""
    assert (await http.put("/v1/models/news", json={"task": "ranking"})).status_code == 201
    body = {"context": {"u": 1.0}, "actions": [{"id": "a"}, {"id": "b"}], "event_id": "r-1"}
    first = await http.post("/v1/models/news/rank", json=body)
    assert first.status_code == 200, first.text
    again = await http.post("/v1/models/news/rank", json=body)
    assert again.status_code == 200 and again.json() == first.json()
    model = (await http.get("/v1/models/news")).json()
    assert model["counters"]["predictions"] == 1
    rewarded = await http.post("/v1/models/news/feedback", json={"event_id": "r-1", "reward": 1})
    assert rewarded.status_code == 200
    settled = await http.post("/v1/models/news/rank", json=body)
    assert settled.status_code == 409 and settled.json()["field"] == "event_id"
    bad = await http.post("/v1/models/news/rank", json={**body, "event_id": "a b"})
    assert bad.status_code == 422 and "event_id" in bad.text
