"""One event id sent to two server processes at once (issue 41): one decision, counted once.

A client that retries a predict or rank against another process behind a load balancer
(its first attempt still running) sends the same event id to two processes at the same
moment.  Each process looked the id up, found it free, decided and stored: the later
write replaced the earlier (two answers for one id) and the store counted both.  The
decisions are now stored only while their ids are free, in one atomic step of the store
(a Lua script on Redis), and the loser answers the winner's decision.

Redis only: the embedded store is one process per data directory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import redis

from tests.service.conftest import REDIS_URL
from tests.service.live_server import LiveServer

pytestmark = pytest.mark.redis

IDS = 40  # event ids per route, each sent to both processes at once
ACTIONS = [{"id": f"a{i}", "features": {"x": float(i)}} for i in range(6)]


async def _race(urls: list[str], path: str, bodies: list[dict[str, Any]]) -> list[list[Any]]:
    """Each body sent to every process at once: per body, the answers in ``urls`` order."""
    limits = httpx.Limits(max_connections=2 * IDS * len(urls))
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:

        async def one(url: str, body: dict[str, Any]) -> Any:
            answer = await http.post(url + path, json=body)
            assert answer.status_code == 200, answer.text
            return answer.json()

        answers = await asyncio.gather(*(one(url, body) for body in bodies for url in urls))
    n = len(urls)
    return [list(answers[i * n : (i + 1) * n]) for i in range(len(bodies))]


def test_one_event_id_on_two_processes_gets_one_decision_counted_once(
    live_servers: Callable[[dict[str, str]], LiveServer], redis_prefix: str
) -> None:
    env = {"BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix}
    a, b = live_servers(env), live_servers(env)
    with a.client() as http:
        assert http.put("/v1/models/p", json={"n_features": 2, "n_actions": 8}).status_code == 201
        assert http.put("/v1/models/r", json={"task": "ranking"}).status_code == 201
    urls = [a.url, b.url]
    single = [{"context": [0.1 * i, -0.2], "event_id": f"p-{i}"} for i in range(IDS)]
    batch = [
        {"contexts": [[0.3, float(i)], [0.5, -float(i)]], "event_ids": [f"b-{i}", f"c-{i}"]}
        for i in range(IDS // 2)
    ]
    ranks = [{"context": {"u": float(i)}, "actions": ACTIONS, "event_id": f"r-{i}"}
             for i in range(IDS)]  # fmt: skip
    slots = [
        {"context": {"u": float(i)}, "actions": ACTIONS, "event_id": f"s-{i}",
         "slots": [{"id": "top"}, {"id": "side"}, {"id": "foot"}]}
        for i in range(IDS // 2)
    ]  # fmt: skip
    raced = [
        asyncio.run(_race(urls, "/v1/models/p/predict", single)),
        asyncio.run(_race(urls, "/v1/models/p/predict", batch)),
        asyncio.run(_race(urls, "/v1/models/r/rank", ranks)),
        asyncio.run(_race(urls, "/v1/models/r/rank_multi_slot", slots)),
    ]
    for answers in raced:
        for from_a, from_b in answers:
            assert from_a == from_b  # one decision, whichever process answered
    store = redis.Redis.from_url(REDIS_URL)
    try:
        counts = {
            name: int(store.hget(f"{redis_prefix}ctr:{{{name}}}", "decisions") or 0)
            for name in ("p", "r")
        }
    finally:
        store.close()
    assert counts == {"p": IDS + IDS, "r": IDS + 3 * (IDS // 2)}  # each decision once
    with a.client() as http_a, b.client() as http_b:
        # each stored decision takes one feedback, from either process
        for i in range(IDS):
            fed = (http_a if i % 2 else http_b).post(
                "/v1/models/p/feedback", json={"event_id": f"p-{i}", "loss": 0.5}
            )
            assert fed.status_code == 200, fed.text
