"""Contract: Microsoft's own Personalizer client (``azure-ai-personalizer``), unchanged, against
a live server with the endpoint ``{server}/v1/models/{name}``: all six calls, its errors,
and a restart that keeps what was learned."""

from __future__ import annotations

import contextlib
import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.live_server import LiveServer

personalizer = pytest.importorskip("azure.ai.personalizer")
from azure.core.credentials import AzureKeyCredential  # noqa: E402
from azure.core.exceptions import HttpResponseError  # noqa: E402

KEYS = {"BANDITREE_API_KEYS": "app-key", "BANDITREE_ADMIN_KEYS": "admin-key"}
FOODS = {
    "pasta": [{"cuisine": "italian"}, {"spice": 1.0}],
    "tacos": [{"cuisine": "mexican"}, {"spice": 3.0}],
    "salad": [{"cuisine": "greek"}, {"spice": 0.0}],
    "curry": [{"cuisine": "indian"}, {"spice": 4.0}],
}


def _actions() -> list[dict[str, object]]:
    return [{"id": name, "features": features} for name, features in FOODS.items()]


def _reward(user: str, action: str) -> float:
    likes = {"ann": {"curry", "tacos"}, "bob": {"pasta", "salad"}}
    return 1.0 if action in likes[user] else 0.0


Connect = Callable[[str, str], Any]  # a PersonalizerClient (imported only when installed)


@pytest.fixture
def connect() -> Iterator[Connect]:
    """Makes Personalizer clients (endpoint, key), each closed when the test ends (a client
    keeps its connection alive)."""
    with contextlib.ExitStack() as opened:

        def client(endpoint: str, key: str) -> Any:
            made = personalizer.PersonalizerClient(endpoint, AzureKeyCredential(key))
            return opened.enter_context(made)

        yield client


@pytest.mark.slow
def test_the_personalizer_sdk_works_unchanged(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, connect: Connect
) -> None:
    env = {
        **KEYS,
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "10",
    }
    server = live_servers(env)
    admin = {"Authorization": "Bearer admin-key"}
    created = httpx.put(f"{server.url}/v1/models/food", json={"task": "ranking"}, headers=admin)
    assert created.status_code == 201, created.text
    client = connect(f"{server.url}/v1/models/food", "app-key")
    rng = random.Random(0)
    for t in range(200):
        user = rng.choice(["ann", "bob"])
        request = {
            "contextFeatures": [{"user": {"name": user}}, {"time": rng.choice(["noon", "night"])}],
            "actions": _actions(),
            "excludedActions": ["salad"] if t % 5 == 0 else [],
            "eventId": f"ev-{t}",
        }
        answer = client.rank(request)
        assert answer["eventId"] == f"ev-{t}"
        ids = [r["id"] for r in answer["ranking"]]
        assert sorted(ids) == sorted(FOODS) and ids[0] == answer["rewardActionId"]
        if t % 5 == 0:
            assert answer["rewardActionId"] != "salad"
        client.reward(answer["eventId"], {"value": _reward(user, answer["rewardActionId"])})

    deferred = client.rank(
        {
            "contextFeatures": [{"user": {"name": "ann"}}],
            "actions": _actions(),
            "deferActivation": True,
        }
    )
    client.reward(deferred["eventId"], {"value": 1.0})  # not activated: ignored, as Personalizer
    client.activate(deferred["eventId"])
    client.reward(deferred["eventId"], {"value": 1.0})
    with pytest.raises(HttpResponseError) as duplicate:
        client.reward(deferred["eventId"], {"value": 1.0})
    assert duplicate.value.status_code == 409
    assert duplicate.value.error is not None and duplicate.value.error.code == "Conflict"

    multi = client.rank_multi_slot(
        {
            "contextFeatures": [{"user": {"name": "bob"}}],
            "actions": _actions(),
            "slots": [
                {"id": "main", "features": [{"size": "large"}], "baselineAction": "pasta"},
                {"id": "side", "features": [{"size": "small"}], "baselineAction": "salad"},
            ],
            "deferActivation": True,
        }
    )
    chosen = [s["rewardActionId"] for s in multi["slots"]]
    assert [s["id"] for s in multi["slots"]] == ["main", "side"] and len(set(chosen)) == 2
    client.activate_multi_slot(multi["eventId"])
    client.reward_multi_slot(
        multi["eventId"],
        {"reward": [{"slotId": "main", "value": 1.0}, {"slotId": "side", "value": 0.5}]},
    )

    with pytest.raises(HttpResponseError) as bad:
        client.rank({"actions": [{"id": "a"}, {"id": "a"}]})
    assert bad.value.status_code == 400 and "actions[1].id" in bad.value.error.message
    with pytest.raises(HttpResponseError) as unknown:
        client.reward("never-ranked", {"value": 1.0})
    assert unknown.value.status_code == 404
    wrong_key = connect(f"{server.url}/v1/models/food", "nope")
    with pytest.raises(HttpResponseError) as refused:
        wrong_key.rank({"actions": _actions()})
    assert refused.value.status_code == 401

    # what was learned survives a restart (the ranking model's checkpoint)
    httpx.post(f"{server.url}/v1/models/food/checkpoints", headers=admin).raise_for_status()
    before = httpx.get(f"{server.url}/v1/models/food", headers=admin).json()
    server.stop(signal.SIGTERM)
    restarted = live_servers(env)
    after = httpx.get(f"{restarted.url}/v1/models/food", headers=admin).json()
    assert after["version"] == before["version"] >= 200
    assert after["counters"]["progressive_mean_loss"] < 0.4  # uniform play: 0.5
    client = connect(f"{restarted.url}/v1/models/food", "app-key")
    hits = 0
    for t in range(40):
        user = ("ann", "bob")[t % 2]
        answer = client.rank({"contextFeatures": [{"user": {"name": user}}], "actions": _actions()})
        best = max(answer["ranking"], key=lambda r: r["probability"])["id"]
        hits += int(_reward(user, best))
    assert hits >= 36
