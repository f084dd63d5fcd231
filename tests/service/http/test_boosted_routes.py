"""The service's features that read a tree, on a ``kind: boosted`` model.

A boosted model (a LightGBM ensemble refitted from the window, blended with a dgt tree)
is what a classification config that names no kind builds
(``tests/learners/test_default_kind_switch.py``).  Each route a default model's user
hits either works on it or answers a clear 4xx naming the field: the export, the
per-leaf statistics and a context's trace (the console's policy and trace pages: the
online tree, with the ensemble's blend weight), a named explanation (the online tree's
path), the drift signals, checkpoints, rollback and a restart, an evaluation of a
candidate, the apprentice switch and the Personalizer routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from banditree.learners.config import defaults
from banditree.models.dgt.trained import TrainedTree
from banditree.supervised import DGTClassifier
from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio

#: a default classification config (features inferred from the first context), boosted
MODEL = {"kind": "boosted", "n_actions": 3, "seed": 2}
ROUNDS = 300


@asynccontextmanager
async def service(data: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(load_settings(data_dir=data, snapshot_poll_seconds=0.05))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client


def contexts(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    return [
        {"age": round(float(rng.normal(40, 10)), 2), "city": str(rng.choice(["a", "b", "c"]))}
        for _ in range(n)
    ]


def best(context: dict[str, Any]) -> int:
    return {"a": 0, "b": 1, "c": 2}[context["city"]] if context["age"] > 40 else 1


async def feed(http: httpx.AsyncClient, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Decide and answer each row; the model once every feedback is learned."""
    for start in range(0, len(rows), 50):
        batch = rows[start : start + 50]
        answer = await http.post("/v1/models/m/predict", json={"contexts": batch})
        assert answer.status_code == 200, answer.text
        for x, d in zip(batch, answer.json()["decisions"], strict=True):
            body = {"event_id": d["event_id"], "loss": float(d["action"] != best(x))}
            assert (await http.post("/v1/models/m/feedback", json=body)).status_code == 200
    return await learned(http, len(rows))


async def learned(http: httpx.AsyncClient, n: int) -> dict[str, Any]:
    for _ in range(600):
        model: dict[str, Any] = (await http.get("/v1/models/m")).json()
        if model["counters"]["feedback"] >= n and model["pending_updates"] == 0:
            return model
        await asyncio.sleep(0.02)
    raise AssertionError(model)


async def greedy(http: httpx.AsyncClient, rows: list[dict[str, Any]]) -> list[int]:
    answer = await http.post("/v1/models/m/predict", json={"contexts": rows})
    return [d["greedy_action"] for d in answer.json()["decisions"]]


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with service(tmp_path) as client:
        assert (await client.put("/v1/models/m", json=MODEL)).status_code == 201
        await feed(client, contexts(ROUNDS))
        yield client


async def test_the_export_describes_the_ensemble_on_named_features(
    http: httpx.AsyncClient,
) -> None:
    exported = (await http.get("/v1/models/m/tree")).json()
    model = exported["model"]
    assert model["kind"] == "boosted" and model["fits"] >= 2 and model["n_trees"] == 50
    assert model["window_rounds"] == ROUNDS
    assert [f["name"] for f in model["features"]["features"]] == ["age", "city"]
    saved = (await http.post("/v1/models/m/checkpoints")).json()
    stored = await http.get(f"/v1/models/m/checkpoints/{saved['sequence']}/tree")
    assert stored.status_code == 200 and stored.json() == exported


async def test_the_console_reads_the_online_tree_with_the_ensembles_blend_weight(
    http: httpx.AsyncClient,
) -> None:
    model = (await http.get("/v1/models/m/tree")).json()["model"]
    blend = model["blend"]
    assert model["online_tree"]["format"] == "banditree.named_tree/v1"
    assert blend["shown"] == "online_tree" and blend["ensemble_decides"]
    assert 0.0 < blend["ensemble_weight"] < 1.0
    assert (blend["fits"], blend["n_trees"]) == (model["fits"], model["n_trees"])
    leaves = (await http.get("/v1/models/m/leaves")).json()
    (tree,) = leaves["leaf_stats"]["trees"]  # the online tree learned every feedback
    assert sum(leaf["feedbacks"] for leaf in tree["leaves"]) == ROUNDS
    assert leaves["probabilities"] is None and leaves["blend"] == blend
    probe = contexts(6, seed=9)
    traced = (await http.post("/v1/models/m/trace", json={"contexts": probe})).json()
    answer = await http.post("/v1/models/m/predict", json={"contexts": probe, "explain": True})
    assert answer.status_code == 200, answer.text
    height = model["online_tree"]["tree"]["height"]
    for trace, decision in zip(traced["traces"], answer.json()["decisions"], strict=True):
        assert trace["blend"] == decision["explained_by"] == blend
        assert trace["explanation"] == decision["explanation"] and trace["explanation"]
        assert trace["decision"]["greedy_action"] == decision["greedy_action"]  # the blend's
        assert sum(trace["decision"]["probabilities"]) == pytest.approx(1.0)
        assert set(trace["online_tree"]) == {"estimates", "probabilities", "greedy_action"}
        (tree,) = trace["trees"]  # the online tree's path, root to leaf
        assert len(tree["path"]) == height + 1
        assert tree["path"][-1] == (1 << height) - 1 + tree["leaf"]
    drift = (await http.get("/v1/models/m/drift")).json()
    assert drift["signals"] == 0 and drift["events"] == []


async def test_a_boosted_model_without_its_online_tree_refuses_a_trace(
    tmp_path: Path,
) -> None:
    async with service(tmp_path) as http:
        body = {**MODEL, "options": {"compete": False, "first_fit": 50}}
        assert (await http.put("/v1/models/m", json=body)).status_code == 201
        await feed(http, contexts(100))  # past the first fit: the ensemble alone decides
        traced = await http.post("/v1/models/m/trace", json={"context": contexts(1)[0]})
        assert traced.status_code == 422 and traced.json()["field"] == "context"
        assert "without its online tree" in traced.json()["detail"]
        leaves = (await http.get("/v1/models/m/leaves")).json()
        assert leaves["leaf_stats"] is None and leaves["blend"] is None
        explained = await http.post(
            "/v1/models/m/predict", json={"contexts": contexts(1), "explain": True}
        )
        assert explained.status_code == 422 and explained.json()["field"] == "explain"


async def test_checkpoint_rollback_and_restart_serve_the_same_ensemble(tmp_path: Path) -> None:
    rows, probe = contexts(ROUNDS), contexts(40, seed=7)
    async with service(tmp_path) as http:
        assert (await http.put("/v1/models/m", json=MODEL)).status_code == 201
        await feed(http, rows)
        saved = (await http.post("/v1/models/m/checkpoints")).json()
        before = await greedy(http, probe)
        assert len(set(before)) > 1  # the model learned something to compare
        await feed(http, contexts(100, seed=3))
        back = await http.post("/v1/models/m/rollback", json={"version": saved["version"]})
        assert back.status_code == 200, back.text
        assert (await http.get("/v1/models/m")).json()["version"] == saved["version"]
        assert await greedy(http, probe) == before
    async with service(tmp_path) as http:  # a restart restores the rolled-back model
        model = (await http.get("/v1/models/m")).json()
        assert model["config"]["kind"] == "boosted" and model["version"] == saved["version"]
        assert await greedy(http, probe) == before
        await feed(http, contexts(50, seed=4))  # and learns on
        exported = (await http.get("/v1/models/m/tree")).json()["model"]
        assert exported["window_rounds"] == ROUNDS + 50


async def test_an_evaluation_replays_the_log_on_a_boosted_candidate(
    http: httpx.AsyncClient,
) -> None:
    candidate = {"name": "wider", "changes": {"explorer_parameter": 100.0}}
    started = await http.post(
        "/v1/models/m/evaluations", json={"candidates": [candidate], "n_bootstrap": 20}
    )
    assert started.status_code == 202, started.text
    for _ in range(1500):
        job: dict[str, Any] = (await http.get(started.headers["location"])).json()
        if job["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert job["status"] == "succeeded", job["error"]
    report = job["result"]["candidates"]
    assert report["current"]["config"]["kind"] == "boosted"
    assert report["wider"]["config"]["kind"] == "boosted"
    assert report["wider"]["config"]["explorer_parameter"] == 100.0
    assert report["current"]["progressive_rounds"] == pytest.approx(ROUNDS)


async def test_apprentice_and_personalizer_answer_what_they_take(
    http: httpx.AsyncClient,
) -> None:
    switched = await http.patch("/v1/models/m", json={"mode": "apprentice"})
    assert switched.status_code == 409 and switched.json()["field"] == "mode"
    body = {"contextFeatures": [{"age": 30}], "actions": [{"id": "x", "features": [{"f": 1}]}]}
    ranked = await http.post("/v1/models/m/personalizer/rank", json=body)
    assert ranked.status_code == 400
    assert "classification model" in ranked.json()["error"]["message"]


async def test_a_boosted_config_outside_classification_is_refused_naming_kind(
    tmp_path: Path,
) -> None:
    async with service(tmp_path) as http:
        for body in ({"task": "ranking", "kind": "boosted"},
                     {"task": "regression", "kind": "boosted", "n_features": 2}):  # fmt: skip
            answer = await http.put("/v1/models/r", json=body)
            assert answer.status_code == 422 and answer.json()["field"] == "kind", answer.text
            assert answer.json()["detail"].startswith("kind: boosted is for classification")
        answer = await http.put(
            "/v1/models/r", json={**MODEL, "n_features": 2, "mode": "apprentice"}
        )
        assert answer.status_code == 422 and answer.json()["field"] == "mode"
        both = {"policy_switch": "tree", "rule_switch": "ucb"}  # one switch at most
        answer = await http.put("/v1/models/r", json={**MODEL, "n_features": 2, "options": both})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "options.rule_switch"
        assert "policy_switch" in answer.json()["detail"]
        warm = {"warm_every": 0}  # a warm start every round at least
        answer = await http.put("/v1/models/r", json={**MODEL, "n_features": 2, "options": warm})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "options.warm_every"
        assert "greater than or equal to 1" in answer.json()["detail"]
        late = {"first_fit": 50, "base_first_fit": 50}  # the base's fits come before
        answer = await http.put("/v1/models/r", json={**MODEL, "n_features": 2, "options": late})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "options.base_first_fit"
        assert "below first_fit (50)" in answer.json()["detail"]


async def test_the_default_creates_boosted_and_apprentice_keeps_the_tree(
    tmp_path: Path,
) -> None:
    assert defaults.CLASSIFICATION_KIND == "boosted"
    async with service(tmp_path) as http:
        created = await http.put("/v1/models/m", json={"n_actions": 3})
        assert created.status_code == 201 and created.json()["config"]["kind"] == "boosted"
        await feed(http, contexts(150))
        assert (await http.get("/v1/models/m/tree")).json()["model"]["fits"] >= 1
        body = {"n_features": 2, "n_actions": 2, "mode": "apprentice"}
        apprentice = await http.put("/v1/models/a", json=body)
        assert apprentice.status_code == 201 and apprentice.json()["config"]["kind"] == "dgt"
        x, y = np.random.default_rng(0).normal(size=(200, 2)), np.zeros(200, dtype=np.int64)
        y[x[:, 0] > 0] = 1
        tree = TrainedTree.from_estimator(
            DGTClassifier(height=2, epochs=2, progress=False).fit(x, y)
        )
        body = {"n_features": 2, "n_actions": 2, "height": 2, "initial_model": tree.to_base64()}
        warm = await http.put("/v1/models/w", json=body)
        assert warm.status_code == 201 and warm.json()["config"]["kind"] == "dgt", warm.text
