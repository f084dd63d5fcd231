"""A ranking model created in apprentice mode, over HTTP: the baseline is played (native,
multi-slot and Personalizer-shaped ranks), the agreement figures show, PATCH goes online."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(load_settings(data_dir=tmp_path, snapshot_poll_seconds=0.05))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            body = {"task": "ranking", "mode": "apprentice", "checkpoint_every_updates": 1}
            created = await client.put("/v1/models/news", json=body)
            assert created.status_code == 201, created.text
            assert created.json()["mode"] == "apprentice"
            client.app = app  # type: ignore[attr-defined]
            yield client


def _actions(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"id": f"a{rng.randrange(10**6)}", "features": {"topic": rng.choice(["sport", "tech"])}}
        for _ in range(4)
    ]


async def test_the_baseline_is_played_until_the_model_goes_online(
    http: httpx.AsyncClient,
) -> None:
    rng = random.Random(0)
    for t in range(120):
        user, actions = rng.choice(["jock", "geek"]), _actions(rng)
        body: dict[str, Any] = {"context": {"user": user}, "actions": actions}
        if t % 4 == 0:
            body["excluded_actions"] = [actions[0]["id"]]
        answer = (await http.post("/v1/models/news/rank", json=body)).json()
        baseline = actions[1 if t % 4 == 0 else 0]
        assert answer["reward_action_id"] == baseline["id"]
        assert answer["ranking"][0] == {"id": baseline["id"], "probability": 1.0}
        reward = float((user == "jock") == (baseline["features"]["topic"] == "sport"))
        fed = await http.post(
            "/v1/models/news/feedback", json={"event_id": answer["event_id"], "reward": reward}
        )
        assert fed.status_code == 200, fed.text
    for _ in range(200):
        info = (await http.get("/v1/models/news")).json()
        if info["version"] >= 120:
            break
        await asyncio.sleep(0.05)
    assert info["mode"] == "apprentice" and info["apprentice"]["decisions_compared"] == 120
    assert info["apprentice"]["default_feedback"] == 120
    await http.app.state.registry.refresh_gauges()  # type: ignore[attr-defined]
    for _ in range(100):  # a slow rendering is refreshed in the background (see metrics)
        metrics = (await http.get("/metrics")).text
        if 'banditree_apprentice_agreement_ratio{model="news"}' in metrics:
            break
        await asyncio.sleep(0.1)
    assert 'banditree_apprentice_agreement_ratio{model="news"}' in metrics
    # Personalizer's rank and multi-slot rank: the first action, each slot's baseline
    pz = {"contextFeatures": [{"user": "geek"}], "actions": _actions(rng)}
    ranked = (await http.post("/v1/models/news/personalizer/rank", json=pz)).json()
    assert ranked["rewardActionId"] == pz["actions"][0]["id"]
    slots = {
        "context": {"user": "geek"}, "actions": pz["actions"],
        "slots": [
            {"id": "top", "baseline_action": pz["actions"][2]["id"]},
            {"id": "side", "baseline_action": pz["actions"][2]["id"]},  # taken: the first
        ],
    }  # fmt: skip
    filled = (await http.post("/v1/models/news/rank_multi_slot", json=slots)).json()["slots"]
    assert [s["reward_action_id"] for s in filled] == [
        pz["actions"][2]["id"], pz["actions"][0]["id"]
    ]  # fmt: skip
    # online: the model ranks by what it learned from the baseline's rewards
    switched = await http.patch("/v1/models/news", json={"mode": "online"})
    assert switched.status_code == 200 and switched.json()["mode"] == "online", switched.text
    hits = 0
    for _ in range(50):
        user, actions = rng.choice(["jock", "geek"]), _actions(rng)
        answer = (
            await http.post(
                "/v1/models/news/rank", json={"context": {"user": user}, "actions": actions}
            )
        ).json()
        best = max(answer["ranking"], key=lambda r: r["probability"])["id"]
        topic = next(a for a in actions if a["id"] == best)["features"]["topic"]
        hits += (user == "jock") == (topic == "sport")
    assert hits >= 45
