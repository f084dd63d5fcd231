"""A model with a feature schema over HTTP: JSON contexts, 4xx naming the field, restart.

The model is a single tree (``kind: dgt``), whose named export and leaves are read here;
the default kind on named features over HTTP: ``test_e2e_features_inferred.py`` and
``tests/service/http/test_boosted_routes.py``."""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from banditree.client import Client
from banditree.features.schema import MAX_FEATURES, MAX_STRING_LENGTH
from tests.service.live_server import LiveServer

FEATURES = {
    "age": "numeric",
    "country": {"type": "categorical", "max_categories": 8},
    "tags": "tags",
    "premium": "boolean",
    "user": {"os": "categorical"},
}


def context(r: random.Random) -> dict[str, Any]:
    return {
        "age": r.choice([r.randint(18, 80), None]),
        "country": r.choice(["DE", "FR", "US"]),
        "tags": ["a", "b"][: r.randint(0, 2)],
        "premium": r.random() < 0.5,
        "user": {"os": r.choice(["ios", "android"])},
    }


def test_json_contexts_learn_refuse_by_field_and_survive_a_restart(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {"BANDITREE_DATA_DIR": str(tmp_path / "data")}
    server = live_servers(env)
    r = random.Random(0)
    with server.client() as http:
        body = {"kind": "dgt", "n_actions": 3, "features": FEATURES}
        created = http.put("/v1/models/m", json=body)
        assert created.status_code in (200, 201), created.text
        assert created.json()["config"]["n_features"] == 2 + 10 + 34 + 2 + 34
        http.put("/v1/models/plain", json={"n_features": 2, "n_actions": 2}).raise_for_status()
        for _ in range(200):
            ctx = context(r)
            d = http.post("/v1/models/m/predict", json={"context": ctx}).json()
            loss = float(d["action"] != (0 if ctx["country"] == "DE" else 1))
            ok = http.post("/v1/models/m/feedback", json={"event_id": d["event_id"], "loss": loss})
            assert ok.status_code == 200, ok.text
        with Client(str(http.base_url)) as client:  # the Python client sends objects as they are
            assert client.predict("m", context(r)).action in (0, 1, 2)
            assert len(client.predict_batch("m", [context(r), context(r)])) == 2
        batch = http.post("/v1/models/m/predict", json={"contexts": [context(r), context(r)]})
        assert batch.status_code == 200 and len(batch.json()["decisions"]) == 2
        bad = [
            ({"context": {"age": "old"}}, "context.age"),
            ({"context": {"country": "x" * (MAX_STRING_LENGTH + 1)}}, "context.country"),
            ({"context": {f"f{i}": 1 for i in range(MAX_FEATURES + 1)}}, "context"),
            ({"contexts": [{"age": 1}, {"premium": "maybe"}]}, "contexts[1].premium"),
            ({"context": [0.1, 0.2]}, "context"),
        ]
        for body, field in bad:
            answer = http.post("/v1/models/m/predict", json=body)
            assert 400 <= answer.status_code < 500, (body, answer.text)
            assert field in answer.text, (field, answer.text)
        explained = http.post(
            "/v1/models/m/predict", json={"context": context(r), "explain": True}
        ).json()
        assert len(explained["explanation"]) == 6 and "> 0" in explained["explanation"][0]
        explained_batch = http.post(
            "/v1/models/m/predict", json={"contexts": [context(r)] * 2, "explain": True}
        ).json()["decisions"]
        assert explained_batch[0]["explanation"] == explained_batch[1]["explanation"]
        assert "explanation" not in http.post("/v1/models/m/predict", json={"context": {}}).json()
        logged = [json.loads(line) for line in http.get("/v1/models/m/log").text.splitlines()]
        assert logged and all(isinstance(row["context"], dict) for row in logged)
        tree = http.get("/v1/models/m/tree").json()["model"]
        assert tree["format"] == "banditree.named_tree/v1"
        no = http.post("/v1/models/plain/predict", json={"context": [1.0, 2.0], "explain": True})
        assert no.status_code == 422 and "explain" in no.text
        refused = http.post("/v1/models/plain/predict", json={"context": {"age": 1}})
        assert 400 <= refused.status_code < 500 and "context" in refused.text
        assert (
            http.post("/v1/models/plain/predict", json={"context": [1.0, 2.0]}).status_code == 200
        )
        deadline = time.monotonic() + 30
        while http.get("/v1/models/m").json()["pending_updates"] and time.monotonic() < deadline:
            time.sleep(0.05)  # feedback is learned off the request path
        before = http.get("/v1/models/m").json()["version"]
        assert before > 0
        probe = [context(random.Random(7)) for _ in range(5)]
        leaves = [
            http.post("/v1/models/m/predict", json={"context": c}).json()["leaf"] for c in probe
        ]
    server.stop(signal.SIGTERM)
    again = live_servers(env)
    with again.client() as http:
        assert http.get("/v1/models/m").json()["version"] == before
        assert [
            http.post("/v1/models/m/predict", json={"context": c}).json()["leaf"] for c in probe
        ] == leaves
