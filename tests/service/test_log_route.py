"""``GET /v1/models/{name}/log`` streams what a store's ``read_log`` yields, as NDJSON."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
import orjson
import pytest
from fastapi import FastAPI

from banditree.learners import Decision, Feedback
from banditree.logs import log_row
from service.main import create_app
from service.routes.log import LogSource
from service.settings import load_settings
from service.store import EmbeddedStore


class EmbeddedStoreWithLog(EmbeddedStore):
    """The embedded store plus an in-memory log, to exercise the route's contract."""

    calls: ClassVar[list[dict[str, Any]]] = []

    async def read_log(
        self, name: str, *, since: int | None, until: int | None, limit: int
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append({"name": name, "since": since, "until": until, "limit": limit})
        for offset in range(1, 8):
            if (since is None or offset > since) and (until is None or offset <= until):
                if limit <= 0:
                    return
                limit -= 1
                decision = Decision(f"e{offset}", (0.5, 1.5), 0, action=1, propensity=0.5)
                yield log_row(decision, Feedback(loss=0.0), offset=offset, time_seconds=1.0)


def _with_app(app: FastAPI, run: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
    """Run ``run`` against ``app`` in process, inside its lifespan."""

    async def main() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
                await run(http)

    asyncio.run(main())


def test_rows_stream_as_ndjson_with_the_bounds_passed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(EmbeddedStoreWithLog(tmp_path), LogSource)
    monkeypatch.setattr("service.main.open_store", lambda s: EmbeddedStoreWithLog(tmp_path))
    app = create_app(load_settings(data_dir=str(tmp_path)))

    async def run(http: httpx.AsyncClient) -> None:
        await http.put("/v1/models/m", json={"kind": "linear", "n_features": 2, "n_actions": 2})
        answer = await http.get("/v1/models/m/log", params={"since": 2, "until": 6, "limit": 3})
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/x-ndjson"
        rows = [orjson.loads(line) for line in answer.text.splitlines()]
        assert [r["offset"] for r in rows] == [3, 4, 5]
        assert EmbeddedStoreWithLog.calls[-1] == {"name": "m", "since": 2, "until": 6, "limit": 3}
        bad = await http.get("/v1/models/m/log", params={"since": 5, "until": 2})
        assert bad.status_code == 422 and bad.json()["field"] == "until"
        assert (await http.get("/v1/models/m/log", params={"limit": 0})).status_code == 422
        assert (await http.get("/v1/models/nope/log")).status_code == 404

    _with_app(app, run)


def test_a_store_without_a_log_answers_501(tmp_path: Path) -> None:
    async def run(http: httpx.AsyncClient) -> None:
        await http.put("/v1/models/m", json={"kind": "linear", "n_features": 2, "n_actions": 2})
        answer = await http.get("/v1/models/m/log")
        assert answer.status_code == 501
        assert "EmbeddedStore keeps no interaction log" in answer.json()["detail"]

    _with_app(create_app(load_settings(data_dir=str(tmp_path))), run)
