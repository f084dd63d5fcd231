"""``max_models`` is exact across processes: the store counts and writes in one step.

Two registries (two processes' worth: each with its own models and creates in flight)
share one store and create at once, more than the cap between them; the store ends with
exactly ``max_models`` records, every create past it is refused 409 (naming the cap),
and a refused create leaves nothing of its model behind.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest

from service.main import create_app
from service.settings import load_settings
from service.store import NameTaken, RedisStore, Store, TooManyModels
from tests.service.conftest import REDIS_URL, delete_prefix

pytestmark = pytest.mark.anyio

CAP, PER_PROCESS = 30, 25
MODEL = {"kind": "linear", "n_features": 2, "n_actions": 2}


async def test_the_store_refuses_a_new_record_past_the_cap(store: Store) -> None:
    await store.save_model("a", "{}", max_models=2)
    await store.save_model("b", "{}", max_models=2)
    with pytest.raises(TooManyModels) as refused:
        await store.save_model("c", "{}", max_models=2)
    assert (refused.value.held, refused.value.limit) == (2, 2)
    with pytest.raises(NameTaken):  # a name it holds: refused, not replaced
        await store.save_model("a", '{"x": 1}', max_models=3)
    assert await store.load_models() == {"a": "{}", "b": "{}"}
    # concurrent new names under a cap of 5: exactly 5 written
    outcomes = await asyncio.gather(
        *(store.save_model(f"n{i}", "{}", max_models=5) for i in range(10)),
        return_exceptions=True,
    )
    assert sum(isinstance(o, TooManyModels) for o in outcomes) == 7
    assert len(await store.load_models()) == 5


@pytest.fixture
async def two_processes(tmp_path: Path) -> AsyncIterator[tuple[str, list[httpx.AsyncClient]]]:
    """Two services on one Redis key prefix (the prefix, a client of each)."""
    prefix = f"banditree-test:{uuid.uuid4().hex}:"
    try:
        async with AsyncExitStack() as stack:
            clients = []
            for i in range(2):
                settings = load_settings(
                    redis_url=REDIS_URL, redis_prefix=prefix, max_models=CAP, store_budget_seconds=30,
                    data_dir=tmp_path / f"p{i}",
                    # the race at the cap is under test, not the store's deadline: a loaded
                    # machine takes longer than the default to connect 14 clients at once
                    redis_timeout_seconds=5.0,
                )  # fmt: skip
                app = create_app(settings)
                await stack.enter_async_context(app.router.lifespan_context(app))
                transport = httpx.ASGITransport(app=app)
                client = httpx.AsyncClient(transport=transport, base_url="http://t", timeout=60)
                clients.append(await stack.enter_async_context(client))
            yield prefix, clients
    finally:
        delete_prefix(prefix)


@pytest.mark.redis
async def test_two_processes_creating_at_once_stop_exactly_at_the_cap(
    two_processes: tuple[str, list[httpx.AsyncClient]],
) -> None:
    prefix, clients = two_processes

    async def create(http: httpx.AsyncClient, name: str) -> httpx.Response:
        return await http.put(f"/v1/models/{name}", json=MODEL)

    answers = await asyncio.gather(
        *(create(http, f"p{p}-m{i}") for i in range(PER_PROCESS) for p, http in enumerate(clients))
    )
    statuses = [a.status_code for a in answers]
    assert statuses.count(201) == CAP, statuses
    refused = [a for a in answers if a.status_code != 201]
    assert len(refused) == 2 * PER_PROCESS - CAP
    assert all(a.status_code == 409 and f"max_models={CAP}" in a.text for a in refused)
    store = RedisStore.from_url(REDIS_URL, prefix=prefix)
    try:
        assert len(await store.load_models()) == CAP
        for answer in refused:  # nothing of a refused model stays behind
            name = answer.request.url.path.rsplit("/", 1)[1]
            assert await store.load_model(name) is None
            assert await store.list_checkpoints(name) == []
            assert await store.log_bounds(name) == await store.log_bounds("never-made")
    finally:
        await store.close()
