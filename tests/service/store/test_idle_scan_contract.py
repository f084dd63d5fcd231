"""Both stores: one scan renews the leases of idle learners and finds those with work."""

from __future__ import annotations

import asyncio
import time

import pytest

from service.store import IdleLearner, Store

pytestmark = pytest.mark.anyio


async def _held(store: Store, name: str, holder: str, ttl_seconds: float = 30.0) -> int:
    await store.hold_model(name)
    token = await store.acquire_lease(name, holder, ttl_seconds=ttl_seconds, now=time.time())
    assert token is not None
    return token


async def test_the_scan_tells_idle_from_work_and_keeps_the_request(store: Store) -> None:
    a, b = await _held(store, "a", "h"), await _held(store, "b", "h")
    assert await store.scan_idle("h", [], ttl_seconds=30, now=time.time()) == {}
    idle = [IdleLearner("a", a, 0), IdleLearner("b", b, 0)]
    assert await store.scan_idle("h", idle, ttl_seconds=30, now=time.time()) == {
        "a": "idle", "b": "idle",
    }  # fmt: skip
    await store.put_events("a", [("e", "p")], now=time.time(), ttl_seconds=10)
    assert (await store.append_feedback("a", "e", "{}", now=time.time())).offset == 1
    await store.request_checkpoint("b")
    assert await store.scan_idle("h", idle, ttl_seconds=30, now=time.time()) == {
        "a": "work", "b": "work",
    }  # fmt: skip
    # the entry applied: idle again; the request is left for the learner to take
    caught_up = [IdleLearner("a", a, 1)]
    assert await store.scan_idle("h", caught_up, ttl_seconds=30, now=time.time()) == {"a": "idle"}
    assert await store.take_checkpoint_request("b")
    assert await store.scan_idle("h", idle[1:], ttl_seconds=30, now=time.time()) == {"b": "idle"}


async def test_the_scan_renews_only_leases_held_under_the_token(store: Store) -> None:
    a = await _held(store, "a", "h", ttl_seconds=0.5)
    other = await _held(store, "o", "someone else")
    revoked = await _held(store, "r", "h")
    await store.save_checkpoint(  # an operator write (a rollback) revokes the lease
        "r", version=1, blob=b"x", keep=5, now=time.time(), offset=0, acked_at=0.0, token=-1
    )
    idle = [
        IdleLearner("a", a, 0), IdleLearner("o", other, 0), IdleLearner("r", revoked, 0),
        IdleLearner("w", 99, 0),  # a model this holder never held
    ]  # fmt: skip
    verdicts = await store.scan_idle("h", idle, ttl_seconds=30, now=time.time())
    assert verdicts == {"a": "idle", "o": "lost", "r": "lost", "w": "lost"}
    assert await store.scan_idle("h", [IdleLearner("a", a + 1, 0)], ttl_seconds=30, now=0) == {
        "a": "lost"
    }
    await asyncio.sleep(0.7)  # past the first ttl: renewed by the scan, so still held
    assert await store.acquire_lease("a", "thief", ttl_seconds=30, now=time.time()) is None
    assert await store.acquire_lease("o", "h", ttl_seconds=30, now=time.time()) is None
