"""The model list after a restart reads the store's records and checkpoint headers: it
restores no model (10,000 idle models took 10.4 s to list the first time when each was
restored for the look) and shows what the loaded models show."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from banditree.persistence import dump_state, dumps, loads, read_summary
from service.domain.registry import serving
from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio

MODELS: dict[str, dict[str, Any]] = {
    "fresh": {"n_features": 2, "n_actions": 3},
    "taught": {"n_features": 2, "n_actions": 3, "checkpoint_every_updates": 1},
    "apprenticed": {
        "n_features": 2,
        "n_actions": 3,
        "mode": "apprentice",
        "checkpoint_every_updates": 1,
    },
    "ranked": {"task": "ranking", "mode": "apprentice", "checkpoint_every_updates": 1},
}
ROUNDS = 12


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    app = create_app(load_settings(data_dir=tmp_path, snapshot_poll_seconds=0.05))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield app, client


async def _teach(client: httpx.AsyncClient, name: str) -> None:
    for t in range(ROUNDS):
        if name == "ranked":
            actions = [{"id": f"a{i}", "features": {"x": float(i + t)}} for i in range(3)]
            body: dict[str, Any] = {"context": {"user": t % 2}, "actions": actions}
            answer = (await client.post(f"/v1/models/{name}/rank", json=body)).json()
            feedback = {"event_id": answer["event_id"], "reward": float(t % 3 == 0)}
        else:
            body = {"context": [float(t % 3), 1.0]}
            if name == "apprenticed":
                body["default_action"] = t % 3
            answer = (await client.post(f"/v1/models/{name}/predict", json=body)).json()
            feedback = {"event_id": answer["event_id"], "loss": float(t % 2)}
        fed = await client.post(f"/v1/models/{name}/feedback", json=feedback)
        assert fed.status_code == 200, fed.text
    for _ in range(400):  # every feedback in a checkpoint: nothing for a learner to load
        stored = (await client.get(f"/v1/models/{name}/checkpoints")).json()["checkpoints"]
        if stored and stored[0]["version"] >= ROUNDS:  # newest first
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} did not learn its {ROUNDS} feedbacks")


def _name(model: dict[str, Any]) -> str:
    return str(model["name"])


def _comparable(model: dict[str, Any]) -> dict[str, Any]:
    """A listed model without what moves with the clock or the gauges' refresh."""
    status = dict(model["status"])
    age = status.pop("checkpoint_age_seconds")
    status.pop("pending_decisions"), status.pop("learner_holder")
    return {**model, "status": {**status, "has_checkpoint": age is not None}}


async def test_a_list_after_a_restart_restores_no_model_and_shows_the_same_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(tmp_path) as (_, client):
        for name, body in MODELS.items():
            created = await client.put(f"/v1/models/{name}", json=body)
            assert created.status_code == 201, created.text
            if name != "fresh":
                await _teach(client, name)
        before = {v: (await client.get(f"/v1/models?view={v}")).json() for v in ("full", "summary")}
    by_name = {m["name"]: m for m in before["full"]["models"]}
    assert by_name["taught"]["counters"]["feedback"] == ROUNDS
    assert by_name["apprenticed"]["apprentice"]["decisions_compared"] == ROUNDS

    restored: list[str] = []
    restore = serving.newest_valid_checkpoint

    async def counted(store: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        restored.append(name)
        return await restore(store, name, *args, **kwargs)

    monkeypatch.setattr(serving, "newest_valid_checkpoint", counted)
    async with served(tmp_path) as (app, client):
        registry = app.state.registry
        after = {v: (await client.get(f"/v1/models?view={v}")).json() for v in ("full", "summary")}
        assert restored == [] and registry.runtimes == {} and len(registry.resident) == 0
        for view in ("full", "summary"):
            listed = sorted((_comparable(m) for m in after[view]["models"]), key=_name)
            assert listed == sorted((_comparable(m) for m in before[view]["models"]), key=_name)
        # each model, loaded now (restored by its first request), shows the same
        for listed in after["full"]["models"]:
            loaded = (await client.get(f"/v1/models/{listed['name']}")).json()
            assert _comparable(loaded) == _comparable(listed)
        assert sorted(restored) == sorted(MODELS)


def test_a_checkpoint_header_holds_the_summary_and_an_older_one_none() -> None:
    from banditree.learners import LearnerConfig, build_learner

    learner = build_learner(LearnerConfig.model_validate({"n_features": 2, "n_actions": 3}))
    found = read_summary(dumps(learner))
    assert found is not None and found["version"] == learner.version
    assert found["counters"]["progressive_mean_loss"] is None  # NaN before any feedback
    assert found["apprentice"] is None
    older = dump_state(*learner.state())  # no summary, as an older release wrote
    assert read_summary(older) is None and loads(older).config() == learner.config()
    assert read_summary(b"") is None and read_summary(b"\xff" * 16) is None
