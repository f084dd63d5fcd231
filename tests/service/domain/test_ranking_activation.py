"""Activation of deferred ranking decisions: counted once, event ids bounded as elsewhere."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from service.domain.runtime.ranking import MAX_EVENT_ID_LENGTH
from service.main import create_app
from service.settings import load_settings
from service.store import Store
from tests.service.conftest import REDIS_URL

pytestmark = pytest.mark.anyio
ACTIONS = [{"id": "a", "features": {"k": "x"}}, {"id": "b", "features": {"k": "y"}}]


@pytest.fixture(params=["sqlite", "redis"])
async def http(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[httpx.AsyncClient]:
    store = {"redis_url": REDIS_URL, "redis_prefix": redis_prefix}
    settings = load_settings(
        data_dir=tmp_path, **(store if request.param == "redis" else {})
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            created = await client.put("/v1/models/news", json={"task": "ranking"})
            assert created.status_code == 201, created.text
            client.app = app  # type: ignore[attr-defined]
            yield client


async def _decisions(http: httpx.AsyncClient) -> tuple[int, int]:
    """The model's decision count as the store holds it, and as the model's info says."""
    runtime = await http.app.state.registry.get("news")  # type: ignore[attr-defined]
    store: Store = runtime.store
    stored = (await store.log_bounds("news")).decisions
    await runtime.refresh_bounds()
    info = (await http.get("/v1/models/news")).json()
    return stored, info["counters"]["predictions"]


async def test_an_activated_decision_is_counted_once(http: httpx.AsyncClient) -> None:
    body = {"context": {"u": 1.0}, "actions": ACTIONS, "defer_activation": True}
    for event_id in ("one", "two"):
        ranked = await http.post("/v1/models/news/rank", json={**body, "event_id": event_id})
        assert ranked.status_code == 200, ranked.text
    assert await _decisions(http) == (2, 2)
    activated = await http.post("/v1/models/news/events/one/activate")
    assert activated.json() == {"event_id": "one", "activated": 1}
    assert await _decisions(http) == (2, 2)
    # the rewritten decision is the one activated: it now takes its reward
    fed = await http.post("/v1/models/news/feedback", json={"event_id": "one", "reward": 1.0})
    assert fed.status_code == 200, fed.text
    refused = await http.post("/v1/models/news/feedback", json={"event_id": "two", "reward": 1.0})
    assert refused.status_code == 422 and "activate" in refused.json()["detail"]
    # multi-slot: every filled slot is one decision, counted once whatever the activations
    slots = {
        "context": {"u": 1.0}, "actions": ACTIONS, "defer_activation": True,
        "slots": [{"id": "top"}, {"id": "side"}],
    }  # fmt: skip
    ranked = await http.post("/v1/models/news/rank_multi_slot", json=slots)
    assert ranked.status_code == 200, ranked.text
    event = ranked.json()["event_id"]
    assert await _decisions(http) == (4, 4)
    again = await http.post(f"/v1/models/news/events/{event}/activate_multi_slot")
    assert again.json()["activated"] == 2, again.text
    assert await _decisions(http) == (4, 4)


async def test_activate_bounds_the_event_id_as_rank_does(http: httpx.AsyncClient) -> None:
    longest = "e" * MAX_EVENT_ID_LENGTH
    body = {"actions": ACTIONS, "defer_activation": True, "event_id": longest}
    assert (await http.post("/v1/models/news/rank", json=body)).status_code == 200
    activated = await http.post(f"/v1/models/news/events/{longest}/activate")
    assert activated.json() == {"event_id": longest, "activated": 1}
    too_long = "e" * (MAX_EVENT_ID_LENGTH + 1)
    refused = await http.post(f"/v1/models/news/events/{too_long}/activate")
    assert refused.status_code == 422, refused.text
    answer = refused.json()
    assert answer["field"] == "event_id", answer
    assert str(MAX_EVENT_ID_LENGTH) in answer["detail"], answer
    # the same bound as a rank's own event id
    ranked = await http.post("/v1/models/news/rank", json={**body, "event_id": too_long})
    assert ranked.status_code == 422 and str(MAX_EVENT_ID_LENGTH) in ranked.json()["detail"]
