"""Hundreds of models in one process on a healthy store: no create, predict or scrape refused.

The regression this guards against: every idle learner polled the store itself (and the
registry had one lock for all models), so with a few hundred models the event loop was
busy with idle work and concurrent creates got 503 from a store that was fine.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import REDIS_URL
from tests.service.live_server import LiveServer

MODELS = 400
MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}
CONTEXT = {"context": [0.1, 0.2, 0.3, 0.4]}


async def _statuses(url: str, requests: list[tuple[str, str, object]]) -> collections.Counter[int]:
    """Send ``(method, path, json)`` requests from 16 concurrent clients: statuses counted."""
    statuses: collections.Counter[int] = collections.Counter()
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        slots = asyncio.Semaphore(16)

        async def send(method: str, path: str, body: object) -> None:
            async with slots:
                statuses[(await http.request(method, path, json=body)).status_code] += 1

        await asyncio.gather(*(send(*request) for request in requests))
    return statuses


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_hundreds_of_concurrent_creates_are_all_answered(
    store: str,
    live_servers: Callable[[dict[str, str]], LiveServer],
    redis_prefix: str,
    tmp_path: Path,
) -> None:
    env = {
        "BANDITREE_API_KEYS": "", "BANDITREE_ADMIN_KEYS": "",
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
    }  # fmt: skip
    if store == "redis":
        env |= {"BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix}
    server = live_servers(env)
    creates = [("PUT", f"/v1/models/m{i}", MODEL) for i in range(MODELS)]
    assert asyncio.run(_statuses(server.url, creates)) == {201: MODELS}
    time.sleep(2)  # every learner has published its first checkpoint and waits for work
    predictions = [("POST", f"/v1/models/m{i}/predict", CONTEXT) for i in range(MODELS)]
    assert asyncio.run(_statuses(server.url, predictions)) == {200: MODELS}
    with server.client() as http:
        assert http.get("/metrics").status_code == 200
        assert len(http.get("/v1/models").json()["models"]) == MODELS
    text = server.log_text()
    assert "store unavailable" not in text and "lost model" not in text, text[-2000:]
