"""The feedback hot path answers exactly as the FastAPI route does.

A body sent as ``application/json`` is answered in the app's outermost layer
(:mod:`service.edge`); the same body as ``application/vnd.test+json`` goes through the
route.  For each body both get a fresh decision of their own and must give the same
status and the same answer (the event id aside), and both must log the feedback.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from service.main import create_app
from service.settings import load_settings
from tests.service.metrics_read import ok_requests_reaching

pytestmark = pytest.mark.anyio
FAST, ROUTE = "application/json", "application/vnd.test+json"
USER, ADMIN = "user-key", "admin-key"
EVENT = "<event>"  # replaced by a fresh decision's event id
BODIES: list[tuple[str, Any]] = [
    ("clf", {"event_id": EVENT, "loss": 0.25}),
    ("clf", {"event_id": EVENT, "loss": 1}),
    ("clf", {"event_id": EVENT, "reward": 1.0}),
    ("clf", {"event_id": EVENT, "loss": 7.0}),  # out of the loss range: the learner's 422
    ("clf", {"event_id": EVENT, "losses": [0.1, 0.2]}),  # not a two-point model
    ("reg", {"event_id": EVENT, "reward": -3.5}),
    ("reg2", {"event_id": EVENT, "losses": [0.1, 0.2]}),
    ("clf", {"event_id": EVENT, "loss": 0.5, "reward": 0.5}),
    ("clf", {"event_id": EVENT, "loss": None}),
    ("clf", {"event_id": EVENT, "loss": "0.5"}),
    ("clf", {"event_id": EVENT, "loss": True}),
    ("clf", {"event_id": EVENT}),
    ("clf", {"event_id": EVENT, "loss": 0.5, "extra": 1}),
    ("clf", {"event_id": "0" * 36, "loss": 0.5}),  # not a decision: 404
    ("clf", {"event_id": "", "loss": 0.5}),
    ("clf", {"event_id": "e" * 129, "loss": 0.5}),
    ("clf", {"event_id": 5, "loss": 0.5}),
    ("clf", [1]),
    ("nope", {"event_id": EVENT, "loss": 0.5}),  # unknown model: 404
]


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = load_settings(data_dir=tmp_path, api_keys=USER, admin_keys=ADMIN)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"authorization": f"Bearer {ADMIN}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=headers
        ) as client:
            for name, config in (
                ("clf", {"n_features": 2, "n_actions": 3}),
                ("reg", {"task": "regression", "n_features": 2, "kind": "dgt"}),
                ("reg2", {"task": "regression", "n_features": 2, "estimator": "two_point"}),
            ):
                (await client.put(f"/v1/models/{name}", json=config)).raise_for_status()
            yield client


async def _answer(http: httpx.AsyncClient, name: str, body: Any, kind: str) -> tuple[int, Any]:
    model = name if name != "nope" else "clf"
    decided = await http.post(f"/v1/models/{model}/predict", json={"context": [0.5, -0.5]})
    event_id = decided.json()["event_id"]
    raw = orjson.dumps(body).replace(EVENT.encode(), event_id.encode())
    answer = await http.post(
        f"/v1/models/{name}/feedback", content=raw, headers={"content-type": kind}
    )
    text = answer.text.replace(event_id, EVENT)
    if answer.status_code == 200:  # logged: a second feedback is refused
        again = await http.post(
            f"/v1/models/{name}/feedback", content=raw, headers={"content-type": kind}
        )
        assert again.status_code == 409, again.text
    return answer.status_code, orjson.loads(text)


async def test_fast_path_and_route_answer_feedback_alike(http: httpx.AsyncClient) -> None:
    statuses = set()
    for name, body in BODIES:
        fast = await _answer(http, name, body, FAST)
        assert fast == await _answer(http, name, body, ROUTE), (name, body)
        statuses.add(fast[0])
    assert statuses == {200, 404, 422}
    unauthorised = await http.post(
        "/v1/models/clf/feedback",
        json={"event_id": "0" * 36, "loss": 0.5},
        headers={"authorization": "Bearer nobody"},
    )
    assert unauthorised.status_code == 401

    async def scrape() -> str:
        return (await http.get("/metrics")).text

    counted = await ok_requests_reaching(scrape, "/v1/models/{name}/feedback", 10.0)
    assert counted is not None and counted >= 10.0
