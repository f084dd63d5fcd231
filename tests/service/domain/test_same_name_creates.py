"""Creates of one name at the ``max_models`` cap, at once: the acknowledged model stays whole.

A create writes the model's keys (held, a warm start's checkpoint) before its record.
Two creates of one name can overlap, in two processes: one is refused (the name taken,
or the cap reached) while the other is under way or has just been acknowledged.  The
refused one must neither overwrite the other's record nor delete the keys the other
wrote: its cleanup deletes the keys only when no other create of the name is under way
or recorded, checked with the delete in one step of the store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest

from service.main import create_app
from service.settings import load_settings
from service.store import NameTaken, Store, TooManyModels
from tests.service.conftest import REDIS_URL

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0
CAP = 4
MODEL = {"kind": "linear", "n_features": 2, "n_actions": 2}


async def held(store: Store, name: str) -> bool:
    """Whether the store holds ``name`` (asked by holding it: a model not held stays held)."""
    return not await store.hold_model(name)


async def test_a_refused_create_leaves_the_keys_of_a_create_under_way_or_recorded(
    store: Store,
) -> None:
    await store.save_model("full", "{}")
    # b is refused at the cap while a is under way: a's keys stay; a then gets its place
    await store.begin_create("x", "a", now=T0)
    await store.hold_model("x")
    await store.begin_create("x", "b", now=T0)
    with pytest.raises(TooManyModels):
        await store.save_model("x", '{"by": "b"}', max_models=1)
    assert not await store.end_create("x", "b", recorded=False, now=T0)
    await store.delete_model("full")
    await store.save_model("x", '{"by": "a"}', max_models=1)
    assert not await store.end_create("x", "a", recorded=True, now=T0)
    assert await store.load_model("x") == '{"by": "a"}' and await held(store, "x")
    # c comes later, finds the name taken: neither the record nor the keys change
    await store.begin_create("x", "c", now=T0)
    with pytest.raises(NameTaken):
        await store.save_model("x", '{"by": "c"}', max_models=5)
    assert not await store.end_create("x", "c", recorded=True, now=T0)
    # d, refused at the cap after a's record: the keys are the recorded model's
    await store.begin_create("x", "d", now=T0)
    with pytest.raises(TooManyModels):
        await store.save_model("y", "{}", max_models=1)
    assert not await store.end_create("x", "d", recorded=False, now=T0)
    assert await store.load_model("x") == '{"by": "a"}' and await held(store, "x")


async def test_a_refused_create_alone_deletes_what_it_wrote(store: Store) -> None:
    await store.save_model("full", "{}")
    for token in ("a", "b"):  # two refused creates of one name: the last one out deletes
        await store.begin_create("x", token, now=T0)
        await store.hold_model("x")
    await store.save_checkpoint(
        "x", version=1, blob=b"warm", keep=2, now=T0, offset=0, acked_at=0.0, token=-1
    )
    assert not await store.end_create("x", "a", recorded=False, now=T0)
    assert await store.list_checkpoints("x") != []
    assert await store.end_create("x", "b", recorded=False, now=T0)
    assert await store.list_checkpoints("x") == [] and await store.load_model("x") is None
    assert not await held(store, "x")
    assert await store.load_models() == {"full": "{}"}


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
async def services(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[tuple[list[httpx.AsyncClient], Store]]:
    """Clients of two services on one Redis (or two clients of one embedded service),
    capped at :data:`CAP`, and the store of the first."""
    async with AsyncExitStack() as stack:
        clients, stores = [], []
        for i in range(2):
            if request.param == "sqlite" and i == 1:
                clients.append(clients[0])
                break
            redis = {"redis_url": REDIS_URL, "redis_prefix": redis_prefix}
            settings = load_settings(
                **(redis if request.param == "redis" else {}), max_models=CAP,
                store_budget_seconds=30, data_dir=tmp_path / f"p{i}",
            )  # fmt: skip
            app = create_app(settings)
            await stack.enter_async_context(app.router.lifespan_context(app))
            stores.append(app.state.registry.store)
            transport = httpx.ASGITransport(app=app)
            client = httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60)
            clients.append(await stack.enter_async_context(client))
        yield clients, stores[0]


async def test_same_name_creates_at_the_cap_keep_the_acknowledged_model_whole(
    services: tuple[list[httpx.AsyncClient], Store],
) -> None:
    clients, store = services
    for i in range(CAP - 1):
        assert (await clients[i % 2].put(f"/v1/models/k{i}", json=MODEL)).status_code == 201
    for round_ in range(12):
        # at the cap: a place frees while both services create "x"; half the rounds
        # start full (the creates race the delete), half with a place free
        full = round_ % 2 == 0
        if full:
            last = await clients[0].put("/v1/models/k-last", json=MODEL)
            assert last.status_code == 201, (round_, last.text)
        answers = await asyncio.gather(
            clients[0].put("/v1/models/x", json=MODEL),
            clients[1].put("/v1/models/x", json=MODEL),
            *([clients[1].delete("/v1/models/k-last")] if full else []),
        )
        created = [a for a in answers[:2] if a.status_code == 201]
        if full:  # the place freed (the other service reads the record from the store)
            assert answers[2].status_code == 204, (round_, [a.text for a in answers])
        assert len(created) <= 1, [a.text for a in answers]
        assert all(a.status_code in (201, 409) for a in answers[:2]), [a.text for a in answers]
        if created:  # acknowledged: its record, held, learning its feedback
            assert await store.load_model("x") is not None and await held(store, "x")
            winner = clients[answers.index(created[0])]
            decision = await winner.post("/v1/models/x/predict", json={"context": [0.1, 0.2]})
            assert decision.status_code == 200, decision.text
            assert (await winner.delete("/v1/models/x")).status_code == 204
        else:  # refused twice: nothing of "x" left behind
            assert await store.load_model("x") is None
            assert await store.list_checkpoints("x") == []
            assert not await held(store, "x")
            await store.delete_model("x")


async def test_a_name_deleted_through_another_process_can_be_created_at_once(
    services: tuple[list[httpx.AsyncClient], Store],
) -> None:
    """A process still serves a model another process deleted (until its discovery sees
    the delete); a create of that name there must not be refused as taken."""
    clients, store = services
    first, other = clients
    for round_ in range(3):
        created = await first.put("/v1/models/m", json=MODEL)
        assert created.status_code == 201, (round_, created.text)
        uid = json.loads(await store.load_model("m") or "{}")["uid"]
        decided = await first.post("/v1/models/m/predict", json={"context": [0.1, 0.2]})
        assert decided.status_code == 200, decided.text
        assert (await other.delete("/v1/models/m")).status_code == 204
        again = await first.put("/v1/models/m", json=MODEL)
        assert again.status_code == 201, (round_, again.text)
        assert json.loads(await store.load_model("m") or "{}")["uid"] != uid
        decided = await first.post("/v1/models/m/predict", json={"context": [0.1, 0.2]})
        assert decided.status_code == 200, decided.text
        assert await store.load_model("m") is not None and await held(store, "m")
        assert (await first.delete("/v1/models/m")).status_code == 204


async def test_a_place_freed_through_another_process_can_be_taken_at_once(
    services: tuple[list[httpx.AsyncClient], Store],
) -> None:
    """At the cap, a model deleted through the other process is still served here until
    discovery sees the delete; a create here must not count it and be refused."""
    (first, other), _ = services
    if first is other:
        pytest.skip("one embedded service: no other process")
    for i in range(CAP):
        assert (await first.put(f"/v1/models/k{i}", json=MODEL)).status_code == 201
    for round_ in range(3):
        assert (await other.delete(f"/v1/models/k{round_}")).status_code == 204
        created = await first.put(f"/v1/models/n{round_}", json=MODEL)
        assert created.status_code == 201, (round_, created.text)
