"""Multi-slot ranking in banditree's own API: slots filled without replacement, one reward
per slot, deferred activation, bad input named, the predict role."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio
ACTIONS = [
    {"id": "pasta", "features": {"cuisine": "italian", "spicy": 0.0}},
    {"id": "tacos", "features": {"cuisine": "mexican", "spicy": 1.0}},
    {"id": "salad", "features": {"cuisine": "greek", "spicy": 0.0}},
]


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = load_settings(
        data_dir=tmp_path, api_keys=["user-key"], admin_keys=["admin-key"],
        snapshot_poll_seconds=0.05,
        scoped_keys=[{"key": "news-reader-key", "roles": ["read"], "models": ["news"]}],
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": "Bearer admin-key"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=headers
        ) as client:
            created = await client.put("/v1/models/news", json={"task": "ranking"})
            assert created.status_code == 201, created.text
            yield client


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "context": {"user": {"country": "DE"}},
        "actions": ACTIONS,
        "slots": [
            {"id": "top", "features": {"size": "large"}, "baseline_action": "pasta"},
            {"id": "side", "features": {"size": "small"}, "excluded_actions": ["salad"]},
            {"id": "third"},
            {"id": "fourth"},
        ],
        **extra,
    }


async def test_slots_are_filled_without_replacement_and_learn_one_reward_each(
    http: httpx.AsyncClient,
) -> None:
    answer = await http.post("/v1/models/news/rank_multi_slot", json=_body(event_id="page-1"))
    assert answer.status_code == 200, answer.text
    out = answer.json()
    assert out["event_id"] == "page-1"
    slots = out["slots"]
    assert [s["id"] for s in slots] == ["top", "side", "third", "fourth"]
    chosen = [s["reward_action_id"] for s in slots]
    assert sorted(chosen[:3]) == ["pasta", "salad", "tacos"] and chosen[3] is None
    assert chosen[1] != "salad" and slots[3]["ranking"] == []
    for k, slot in enumerate(slots[:3]):
        ranking = slot["ranking"]
        assert ranking[0]["id"] == slot["reward_action_id"]
        assert abs(sum(r["probability"] for r in ranking) - 1.0) < 1e-9
        taken = {s for s in chosen[:k]} | ({"salad"} if slot["id"] == "side" else set())
        assert {r["id"] for r in ranking if r["probability"] == 0.0} == taken
    # sent again (a retry): the stored answer, counted once (it answered 409 before)
    again = await http.post("/v1/models/news/rank_multi_slot", json=_body(event_id="page-1"))
    assert again.status_code == 200 and again.json() == out
    assert (await http.get("/v1/models/news")).json()["counters"]["predictions"] == 3
    rewards = {"rewards": [{"slot_id": "top", "reward": 1.0}, {"slot_id": "side", "reward": 0.0}]}
    path = "/v1/models/news/events/page-1/reward_multi_slot"
    taken_reward = await http.post(path, json=rewards)
    assert taken_reward.json() == {"event_id": "page-1", "rewarded": 2}
    deadline = time.monotonic() + 10
    while (await http.get("/v1/models/news")).json()["counters"]["feedback"] < 2:
        assert time.monotonic() < deadline, "the slots' rewards were never learned"
        await asyncio.sleep(0.05)
    twice = await http.post(path, json=rewards)
    assert twice.status_code == 409
    settled = await http.post("/v1/models/news/rank_multi_slot", json=_body(event_id="page-1"))
    assert settled.status_code == 409 and settled.json()["field"] == "event_id"
    empty = await http.post(path, json={"rewards": [{"slot_id": "fourth", "reward": 1.0}]})
    assert empty.status_code == 422 and empty.json()["field"] == "rewards[0].slot_id"
    third = await http.post(path, json={"rewards": [{"slot_id": "third", "reward": -1.0}]})
    assert third.status_code == 200
    done = await http.post(path, json={"rewards": [{"slot_id": "third", "reward": 1.0}]})
    assert done.status_code == 409  # every slot rewarded


async def test_deferred_slots_wait_for_activation(http: httpx.AsyncClient) -> None:
    body = _body(event_id="page-2", defer_activation=True)
    assert (await http.post("/v1/models/news/rank_multi_slot", json=body)).status_code == 200
    reward = {"rewards": [{"slot_id": "top", "reward": 1.0}]}
    path = "/v1/models/news/events/page-2"
    refused = await http.post(f"{path}/reward_multi_slot", json=reward)
    assert refused.status_code == 422 and "activate" in refused.json()["detail"]
    activated = await http.post(f"{path}/activate_multi_slot")
    assert activated.json() == {"event_id": "page-2", "activated": 3}
    assert (await http.post(f"{path}/activate_multi_slot")).json()["activated"] == 0
    assert (await http.post(f"{path}/reward_multi_slot", json=reward)).status_code == 200
    unknown = await http.post("/v1/models/news/events/nope/activate_multi_slot")
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_body(slots=[]), "slots"),
        (_body(slots=[{"id": f"s{i}"} for i in range(17)]), "slots"),
        (_body(slots=[{"id": "a"}, {"id": "a"}]), "slots"),
        (_body(slots=[{"id": "a", "colour": 1}]), "slots.0.colour"),
        (_body(actions=[]), "actions"),
        (_body(slots=[{"id": "a", "excluded_actions": ["pasta", "tacos", "salad"]}]), None),
    ],
)
async def test_bad_multi_slot_ranks_name_the_field(
    http: httpx.AsyncClient, body: dict[str, Any], field: str | None
) -> None:
    answer = await http.post("/v1/models/news/rank_multi_slot", json=body)
    if field is None:  # every candidate excluded: the slot is left empty, not refused
        assert answer.status_code == 200 and answer.json()["slots"][0]["reward_action_id"] is None
        return
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field


async def test_bad_multi_slot_rewards_name_the_field(http: httpx.AsyncClient) -> None:
    await http.post("/v1/models/news/rank_multi_slot", json=_body(event_id="page-3"))
    path = "/v1/models/news/events/page-3/reward_multi_slot"
    for rewards, field in (
        ([{"slot_id": "top", "reward": 1.5}], "rewards.0.reward"),
        ([], "rewards"),
        ([{"slot_id": "top", "reward": 1.0}, {"slot_id": "top", "reward": 0.0}], "rewards"),
        ([{"slot_id": "nope", "reward": 1.0}], "rewards[0].slot_id"),
    ):
        answer = await http.post(path, json={"rewards": rewards})
        assert answer.status_code == 422, (rewards, answer.text)
        assert answer.json()["field"] == field
    missing = await http.post(
        "/v1/models/news/events/never/reward_multi_slot",
        json={"rewards": [{"slot_id": "top", "reward": 1.0}]},
    )
    assert missing.status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/v1/models/news/rank_multi_slot",
        "/v1/models/news/events/e1/reward_multi_slot",
        "/v1/models/news/events/e1/activate_multi_slot",
    ],
)
async def test_multi_slot_routes_need_the_predict_role(http: httpx.AsyncClient, path: str) -> None:
    http.headers.pop("Authorization")
    answer = await http.post(path, json={}, headers={"Authorization": "Bearer news-reader-key"})
    assert answer.status_code == 403 and "predict role" in answer.json()["detail"]
    user = await http.post(path, json={}, headers={"Authorization": "Bearer user-key"})
    assert user.status_code in (404, 422), user.text
