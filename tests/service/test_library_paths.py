"""``BANDITREE_LIBRARY_PATHS`` runs a hand-built part on its library's own path.

Each path is a real, working one (the re-measurements in ``docs/decisions`` compare
them): ``front`` answers predict through FastAPI's route, ``redis_wire`` makes every
Redis call through redis-py's pooled client, ``gc`` leaves CPython's collector as it is.
"""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
import pytest

from service.edge.app import ServiceApp
from service.main import create_app
from service.settings import SettingsError, load_settings
from service.store import RedisStore
from tests.service.own_redis import OwnRedis, needs_redis_server
from tests.service.store.test_redis_decision_writes import pending, put_many, transactions

pytestmark = pytest.mark.anyio

MODEL = {"kind": "dgt", "n_features": 4, "n_actions": 3}


def test_library_paths_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BANDITREE_LIBRARY_PATHS", "gc, front")
    assert load_settings().library_paths == ["gc", "front"]
    monkeypatch.setenv("BANDITREE_LIBRARY_PATHS", "")
    assert load_settings().library_paths == []


def test_an_unknown_library_path_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BANDITREE_LIBRARY_PATHS", "gc,hiredis")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "BANDITREE_LIBRARY_PATHS" in str(err.value)
    assert "redis_wire" in str(err.value)  # the values it takes


@pytest.mark.parametrize("front", [False, True])
async def test_front_on_the_library_path_answers_predict_through_fastapi(
    tmp_path: Path, front: bool
) -> None:
    paths = ["front"] if front else []
    app = create_app(load_settings(data_dir=tmp_path, library_paths=paths))
    assert isinstance(app, ServiceApp)
    assert app._front is not None
    assert (app._front.hot is None) is front
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            assert (await http.put("/v1/models/m", json=MODEL)).status_code == 201
            answer = await http.post("/v1/models/m/predict", json={"context": [0.1] * 4})
            assert answer.status_code == 200, answer.text
            assert 0 <= answer.json()["action"] < 3
            refused = await http.post("/v1/models/m/predict", json={"context": [0.1] * 5})
            assert refused.status_code == 422


@pytest.mark.parametrize("part", ["gc", "front"])
async def test_gc_on_the_library_path_is_not_frozen(tmp_path: Path, part: str) -> None:
    threshold = gc.get_threshold()
    app = create_app(load_settings(data_dir=tmp_path, library_paths=[part]))
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() == 0
            assert gc.get_threshold() == threshold
            freezer = app.state.registry.freezer
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                assert (await http.put("/v1/models/m", json=MODEL)).status_code == 201
            # a create schedules a freeze of the new model's objects, unless the collector
            # is left as it comes ('gc')
            assert (freezer._pending is None) is (part == "gc")
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@needs_redis_server
@pytest.mark.parametrize("wire", [False, True])
async def test_redis_wire_off_stores_decisions_through_the_pool(
    own_redis: OwnRedis, wire: bool
) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{own_redis.port}/0", wire=wire)
    try:
        assert (store._wire is not None) is wire
        assert (store._log_wire is not None) is wire
        await store.ping()
        await put_many(store, ["a"], 1, "warm")  # connects
        transactions(own_redis.port)
        ids = await put_many(store, ["a", "b"], 40, "e")
        # one transaction per model either way (the pool's is redis-py's pipeline)
        assert transactions(own_redis.port) == {"exec": 2, "zadd": 2, "hincrby": 2, "set": 40}
        assert await pending(store, "a", ids[0::2]) == ["pending"] * 20
        assert await pending(store, "b", ids[1::2]) == ["pending"] * 20
    finally:
        await store.close()


@pytest.mark.parametrize("limits", [False, True])
def test_limits_on_the_library_path_serve_on_uvicorns_own_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits: bool
) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from banditree_cli import app as cli
    from service.edge.connection_limits import GuardedHttp

    ran: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: ran.update(kwargs))
    monkeypatch.setenv("BANDITREE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BANDITREE_MAX_CONNECTIONS", "50")
    monkeypatch.setenv("BANDITREE_LIBRARY_PATHS", "limits" if limits else "")
    result = CliRunner().invoke(cli, ["serve"])
    assert result.exit_code == 0, result.output
    assert ran["http"] == ("httptools" if limits else GuardedHttp)
    assert ran["limit_concurrency"] == (50 if limits else None)
