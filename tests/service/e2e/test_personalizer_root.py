"""Contract: Microsoft's Python Personalizer clients (``azure-ai-personalizer``), both of
them, every operation, with the endpoint set to the server's root and a key scoped to one
model, and nothing else changed; how the model is chosen when the key does not decide."""

from __future__ import annotations

import contextlib
import io
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.live_server import LiveServer

personalizer = pytest.importorskip("azure.ai.personalizer")
from azure.core.credentials import AzureKeyCredential  # noqa: E402
from azure.core.exceptions import HttpResponseError  # noqa: E402

MENU_KEY = "menu-key-1"
SCOPED = f'[{{"key": "{MENU_KEY}", "roles": ["predict", "read", "admin"], "models": ["menu"]}}]'
KEYS = {
    "BANDITREE_API_KEYS": "app-key",
    "BANDITREE_ADMIN_KEYS": "admin-key",
    "BANDITREE_SCOPED_KEYS": SCOPED,
}
ADMIN = {"Authorization": "Bearer admin-key"}
FOODS = {
    "pasta": [{"cuisine": "italian"}, {"spice": 1.0}],
    "tacos": [{"cuisine": "mexican"}, {"spice": 3.0}],
    "salad": [{"cuisine": "greek"}, {"spice": 0.0}],
    "curry": [{"cuisine": "indian"}, {"spice": 4.0}],
}
LIKES = {"ann": {"curry", "tacos"}, "bob": {"pasta", "salad"}}


def _actions() -> list[dict[str, object]]:
    return [{"id": name, "features": features} for name, features in FOODS.items()]


@pytest.fixture
def clients() -> Iterator[Callable[[type, str, str], Any]]:
    """Makes Personalizer clients (class, endpoint, key), each closed at the end."""
    with contextlib.ExitStack() as opened:

        def make(cls: type, endpoint: str, key: str) -> Any:
            return opened.enter_context(cls(endpoint, AzureKeyCredential(key)))

        yield make


def _start(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, **env: str
) -> LiveServer:
    server = live_servers({**KEYS, "BANDITREE_DATA_DIR": str(tmp_path / "data"), **env})
    created = httpx.put(
        f"{server.url}/v1/models/menu",
        json={"task": "ranking", "event_ttl_seconds": 600, "default_loss": 1.0},
        headers=ADMIN,
    )
    assert created.status_code == 201, created.text
    return server


def _learn(client: Any, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for t in range(n):
        user = rng.choice(sorted(LIKES))
        answer = client.rank(
            {
                "contextFeatures": [{"user": {"name": user}}],
                "actions": _actions(),
                "eventId": f"e{seed}-{t}",
            }
        )
        reward = 1.0 if answer["rewardActionId"] in LIKES[user] else 0.0
        client.reward(answer["eventId"], {"value": reward})


def _until_done(read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = read()
        if found["status"] != "Running":
            return found
        time.sleep(0.1)
    raise AssertionError("the job did not finish within 120 s")


def _refused(call: Callable[[], object], status: int, named: str) -> None:
    with pytest.raises(HttpResponseError) as refused:
        call()
    assert refused.value.status_code == status, refused.value
    assert refused.value.error is not None and named in refused.value.error.message


@pytest.mark.slow
def test_both_python_clients_work_at_the_root(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, clients: Any
) -> None:
    server = _start(live_servers, tmp_path)
    client = clients(personalizer.PersonalizerClient, server.url, MENU_KEY)
    admin = clients(personalizer.PersonalizerAdministrationClient, server.url, MENU_KEY)
    _learn(client, 150)
    deferred = client.rank({"actions": _actions(), "deferActivation": True})
    client.activate(deferred["eventId"])
    multi = client.rank_multi_slot(
        {
            "contextFeatures": [{"user": {"name": "bob"}}],
            "actions": _actions(),
            "slots": [
                {"id": "main", "baselineAction": "pasta"},
                {"id": "side", "baselineAction": "salad"},
            ],
            "deferActivation": True,
        }
    )
    client.activate_multi_slot(multi["eventId"])
    client.reward_multi_slot(multi["eventId"], {"reward": [{"slotId": "main", "value": 1.0}]})

    # service configuration <-> the model's event policy, explorer and mode
    config = admin.get_service_configuration()
    assert config["rewardWaitTime"] == "PT10M" and config["defaultReward"] == 0.0
    assert config["explorationPercentage"] is None and config["learningMode"] == "Online"
    assert admin.update_service_configuration(config) == config  # sent back as read: no change
    changed = admin.update_service_configuration({**config, "explorationPercentage": 20})
    assert changed["explorationPercentage"] == pytest.approx(20.0)
    assert admin.get_policy()["arguments"] == "--cb_explore_adf --epsilon 0.2"
    _refused(
        lambda: admin.update_service_configuration({**config, "rewardWaitTime": "PT1H"}),
        400,
        'rewardWaitTime: "PT1H" cannot be applied: the wait of a model\'s events is event_ttl_seconds',
    )
    _refused(
        lambda: admin.update_service_configuration({**config, "rewardAggregation": "sum"}),
        400,
        "rewardAggregation",
    )
    _refused(
        lambda: admin.update_service_configuration({"colour": "blue"}), 400, "colour: not a field"
    )
    _refused(
        lambda: admin.update_service_configuration({"learningMode": "Apprentice"}),
        400,
        "created online",
    )

    # policy <-> the explorer, as VW arguments
    squarecb = {"name": "sq", "arguments": "--cb_explore_adf --squarecb --gamma_scale 20"}
    assert admin.update_policy(squarecb)["arguments"] == squarecb["arguments"]
    assert admin.get_policy()["name"] == "banditree squarecb"
    _refused(
        lambda: admin.update_policy(
            {"name": "x", "arguments": "--cb_explore_adf --epsilon 0.2 -q ::"}
        ),
        400,
        "'-q' is not accepted",
    )
    assert admin.reset_policy()["arguments"] == "--cb_explore_adf --fastcb"

    # evaluations <-> evaluate over the model's own log, as background jobs
    now = datetime.now(UTC)
    window = {
        "startTime": (now - timedelta(hours=1)).isoformat(),
        "endTime": (now + timedelta(hours=1)).isoformat(),
    }
    policies = [{"name": "greedy", "arguments": "--cb_explore_adf --epsilon 0"}]
    admin.create_evaluation(
        "ev1", {"name": "first", **window, "policies": policies, "enablePolicyOptimization": True}
    )
    done = _until_done(lambda: admin.get_evaluation("ev1", start_time=now, end_time=now))
    assert done["status"] == "Succeeded", done
    results = {r["name"]: r for r in done["content"]["value"]}
    assert {"Online", "greedy"} <= set(results) and len(results) >= 4
    assert results["Online"]["policySource"] == "Online"
    assert results["greedy"]["policySource"] == "Custom"
    for result in results.values():
        low, high = result["summary"]["confidenceInterval"]
        assert 0.0 <= low <= result["summary"]["expectedReward"] <= high <= 1.0
    assert done["optimalPolicy"] in results
    assert [e["id"] for e in admin.list_evaluations()] == ["ev1"]
    _refused(lambda: list(admin.list_evaluations(filter_expression="x eq 'y'")), 400, "filter:")
    _refused(
        lambda: admin.create_evaluation("ev1", {"name": "again", **window}), 409, "exists already"
    )
    admin.apply_from_evaluation({"evaluationId": "ev1", "policyName": "greedy"})
    assert admin.get_policy()["arguments"] == "--cb_explore_adf --epsilon 0"
    admin.delete_evaluation("ev1")
    _refused(lambda: admin.get_evaluation("ev1", start_time=now, end_time=now), 404, "ev1")

    # feature importances <-> banditree.ranking.importance over the served model
    admin.create_feature_importance("fi1", {"name": "features", **window})
    found = _until_done(lambda: admin.get_feature_importance("fi1"))
    assert found["status"] == "Succeeded", found
    scores = {(s["namespace"], s["featureName"]): s["score"] for s in found["featureScores"]}
    assert ("user", "name") in scores and ("action", "cuisine") in scores
    assert scores["user", "name"] > 0
    assert [f["id"] for f in admin.list_feature_importances()] == ["fi1"]
    admin.delete_feature_importance("fi1")
    assert list(admin.list_feature_importances()) == []

    # logs and model <-> the log, checkpoints, warm start and a fresh model
    span = admin.get_log_properties()["dateRange"]
    assert span["from"] <= span["to"]
    properties = admin.get_model_properties()
    assert properties["creationTime"] <= properties["lastModifiedTime"]
    exported = b"".join(admin.export_model())
    version = httpx.get(f"{server.url}/v1/models/menu", headers=ADMIN).json()["version"]
    assert version > 100
    admin.reset_model()
    assert httpx.get(f"{server.url}/v1/models/menu", headers=ADMIN).json()["version"] == 0
    admin.import_model(io.BytesIO(exported))
    assert httpx.get(f"{server.url}/v1/models/menu", headers=ADMIN).json()["version"] == version
    _refused(
        lambda: admin.import_model(io.BytesIO(b"not a model")), 400, "not a banditree model export"
    )
    admin.delete_logs()
    log = httpx.get(f"{server.url}/v1/models/menu/log", headers=ADMIN)
    assert log.status_code in (200, 204) and log.text.strip() == ""
    assert httpx.get(f"{server.url}/v1/models/menu", headers=ADMIN).json()["version"] == version


@pytest.mark.slow
def test_the_model_comes_from_the_key_or_the_default(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, clients: Any
) -> None:
    server = _start(live_servers, tmp_path)
    everything = clients(personalizer.PersonalizerClient, server.url, "app-key")
    _refused(lambda: everything.rank({"actions": _actions()}), 400, "no model for this request")
    bad_version = httpx.post(
        f"{server.url}/personalizer/v9/rank",
        json={"actions": _actions()},
        headers={"Ocp-Apim-Subscription-Key": MENU_KEY},
    )
    assert bad_version.status_code == 404 and "v9" in bad_version.json()["error"]["message"]
    missing_key = httpx.post(f"{server.url}/personalizer/v1.0/rank", json={"actions": _actions()})
    assert missing_key.status_code == 401 and missing_key.json()["error"]["code"] == "Unauthorized"
    predict_only = clients(personalizer.PersonalizerAdministrationClient, server.url, "app-key")
    _refused(predict_only.reset_model, 403, "admin")
    server.stop()

    defaulted = _start(live_servers, tmp_path / "defaulted", BANDITREE_PERSONALIZER_MODEL="menu")
    client = clients(personalizer.PersonalizerClient, defaulted.url, "app-key")
    _learn(client, 5)
    log = httpx.get(f"{defaulted.url}/v1/models/menu/log", headers=ADMIN)
    assert len(log.text.splitlines()) == 5  # the 5 rewards, logged for the default model
