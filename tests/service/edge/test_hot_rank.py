"""Rank on the hot path: bodies taken only as the schema reads them, answers as the route's.

A rank body sent as ``application/json`` is answered in front of the router
(:mod:`service.edge`); the same body as ``application/vnd.test+json`` goes through the
FastAPI route.  Both must give the same status and refusal, the same decision for the
same event id, and both decisions must be stored.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from pydantic import ValidationError

from service.edge.serve import hot_route, rank_body
from service.http.routes.ranking import RankCreate
from service.main import create_app
from service.settings import load_settings
from tests.service.metrics_read import ok_requests_reaching

FAST, ROUTE = "application/json", "application/vnd.test+json"


def _actions(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"id": f"item{j}", "features": {"genre": rng.choice("wxyz"), "price": rng.random()}}
        for j in range(n)
    ]


TAKEN: list[Any] = [
    {"actions": [{"id": "a"}]},
    {"context": {"u": 1}, "actions": _actions(3), "event_id": "e" * 100},
    {"context": [{"u": {"v": "x"}}, {"t": 2}], "actions": [{"id": "a", "features": None}]},
    {"context": None, "actions": [{"id": "a", "features": [{"k": 1}, {"j": "2"}]}]},
    {"actions": _actions(256), "excluded_actions": ["item3", "zz"], "defer_activation": True},
    {"actions": _actions(2), "excluded_actions": [], "event_id": None, "defer_activation": False},
]
ATOMS: list[Any] = [
    None, 0, 1.5, True, "", "x", "e" * 101, "i" * 257, [], {}, [{}], [{"k": 1}, 3],
    {"k": [1, 2]}, ["a", "b"], ["a", 1], "true",
]  # fmt: skip
KEYS = ["context", "actions", "excluded_actions", "event_id", "defer_activation", "extra"]


def _schema(data: Any) -> RankCreate | None:
    try:
        return RankCreate.model_validate(data)
    except ValidationError:
        return None


def _same(body: Any, schema: RankCreate) -> None:
    assert body.context == schema.context
    assert body.actions == [(a.id, a.features) for a in schema.actions]
    assert body.excluded_actions == schema.excluded_actions
    assert (body.event_id, body.defer_activation) == (schema.event_id, schema.defer_activation)


@pytest.mark.parametrize("data", TAKEN)
def test_usual_rank_bodies_are_taken_as_the_schema_reads_them(data: Any) -> None:
    body = rank_body(data)
    assert body is not None
    _same(body, RankCreate.model_validate(data))


def _random_action(rng: random.Random) -> Any:
    if rng.random() < 0.2:
        return rng.choice(ATOMS)
    action = {"id": rng.choice(["a", "b", "", 3, "i" * 257]), "features": rng.choice(ATOMS)}
    if rng.random() < 0.1:
        action["extra"] = 1
    return action


def test_a_rank_body_the_schema_refuses_is_never_taken() -> None:
    rng = random.Random(0)
    taken = 0
    for _ in range(4000):
        data: dict[str, Any] = {k: rng.choice(ATOMS) for k in rng.sample(KEYS, rng.randint(0, 4))}
        if rng.random() < 0.8:
            data["actions"] = [_random_action(rng) for _ in range(rng.randint(0, 3))]
        body = rank_body(data)
        if body is not None:
            taken += 1
            schema = _schema(data)
            assert schema is not None, data
            _same(body, schema)
    assert taken > 20  # the table reaches bodies that are taken, too


@pytest.mark.parametrize(
    ("path", "taken"),
    [
        ("/v1/models/m/rank", ("rank", "m")),
        ("/v1/models/m/rank/", None),
        ("/v1/models/m/rank_multi_slot", None),
        ("/v1/models/m/personalizer/rank", None),
    ],
)
def test_which_rank_requests_take_the_hot_path(path: str, taken: Any) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"20")]
    assert hot_route({"type": "http", "method": "POST", "path": path, "headers": headers}) == taken


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = load_settings(data_dir=tmp_path, snapshot_poll_seconds=0.05)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            for name in ("a", "b"):  # the same model twice, fed the same log
                created = await client.put(f"/v1/models/{name}", json={"task": "ranking"})
                assert created.status_code == 201, created.text
            rng = random.Random(3)
            rewards: dict[str, list[float]] = {"a": [], "b": []}
            for i in range(60):  # ranked before any is learned: both models' decisions alike
                body = {"context": {"u": rng.choice("pq")}, "actions": _actions(4, i)}
                for name in ("a", "b"):
                    ranked = await client.post(
                        f"/v1/models/{name}/rank", json={**body, "event_id": f"w{i}"}
                    )
                    rewards[name].append(float(ranked.json()["reward_action_id"] == "item0"))
            assert rewards["a"] == rewards["b"]
            for i, reward in enumerate(rewards["a"]):
                for name in ("a", "b"):
                    fed = await client.post(
                        f"/v1/models/{name}/feedback", json={"event_id": f"w{i}", "reward": reward}
                    )
                    assert fed.status_code == 200, fed.text
            for _ in range(200):
                versions = [(await client.get(f"/v1/models/{n}")).json()["version"] for n in "ab"]
                if versions == [60, 60]:
                    break
                await asyncio.sleep(0.05)
            assert versions == [60, 60]
            yield client


async def _post(http: httpx.AsyncClient, name: str, body: bytes, kind: str) -> tuple[int, Any]:
    answer = await http.post(
        f"/v1/models/{name}/rank", content=body, headers={"content-type": kind}
    )
    return answer.status_code, answer.json()


async def _alike(http: httpx.AsyncClient, name: str, body: bytes) -> int:
    """The status of ``body`` by either path, after checking both answer alike (a new
    event id aside)."""
    answers = [await _post(http, name, body, kind) for kind in (FAST, ROUTE)]
    for status, data in answers:
        if status == 200:
            data.pop("event_id")
    assert answers[0] == answers[1], body
    return answers[0][0]


BAD: list[Any] = [
    {"actions": []},
    {"actions": [{"id": f"a{i}"} for i in range(257)]},
    {"actions": [{"id": "a"}, {"id": "a"}]},
    {"actions": [{"id": "a"}], "excluded_actions": ["a"]},
    {"actions": [{"id": "a", "features": 3}]},
    {"actions": [{"id": "a"}], "extra": 1},
    {"actions": [{"id": "a"}], "event_id": "e" * 101},
    {"actions": [{"id": "a"}], "event_id": "has#hash"},
    {"actions": [{"id": "a"}], "defer_activation": "maybe"},
    {"context": {"n": [1] * 300}, "actions": [{"id": "a"}]},
    [],
]


@pytest.mark.anyio
async def test_hot_path_and_route_answer_alike(http: httpx.AsyncClient) -> None:
    statuses = {await _alike(http, "a", orjson.dumps(body)) for body in BAD}
    for raw in (b"", b"{", b'{"actions": [{"id": "a", "features": {"x": NaN}}]}'):
        statuses.add(await _alike(http, "a", raw))
    assert statuses == {200, 422}  # features the schema does not know are ignored: 200
    assert await _alike(http, "nope", orjson.dumps({"actions": [{"id": "a"}]})) == 404
    # the same event id on the same model state: the same decision, by either path
    for i in range(40):
        body = {
            "context": {"u": "pq"[i % 2]},
            "actions": _actions(10, 100 + i),
            "event_id": f"x{i}",
        }
        if i % 3 == 0:
            body["excluded_actions"] = ["item1"]
        fast = await _post(http, "a", orjson.dumps(body), FAST)
        route = await _post(http, "b", orjson.dumps(body), ROUTE)
        assert fast[0] == 200 and fast == route, (fast, route)
    for i in range(40):  # both paths stored their decisions: the rewards are taken
        for name in ("a", "b"):
            fed = await http.post(
                f"/v1/models/{name}/feedback", json={"event_id": f"x{i}", "reward": 0.5}
            )
            assert fed.status_code == 200, fed.text

    async def scrape() -> str:
        return (await http.get("/metrics")).text

    counted = await ok_requests_reaching(scrape, "/v1/models/{name}/rank", 120 + 80)
    assert counted is not None and counted >= 120 + 80
