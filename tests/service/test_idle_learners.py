"""Idle learners wait together: their leases are renewed, and work elsewhere wakes them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from service.runtime.idle import IdleLearners
from service.store import SqliteStore

pytestmark = pytest.mark.anyio

LEASE_SECONDS = 0.6


async def test_a_parked_learner_keeps_its_lease_and_wakes_for_work_or_a_loss(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path)
    idle = IdleLearners(store, holder="h", lease_seconds=LEASE_SECONDS)
    try:
        await store.hold_model("m")
        token = await store.acquire_lease("m", "h", ttl_seconds=LEASE_SECONDS, now=time.time())
        assert token is not None
        wake = asyncio.Event()
        waiting = asyncio.create_task(
            idle.wait("m", wake, token=token, offset=0, renewed=time.monotonic())
        )
        await asyncio.sleep(3 * LEASE_SECONDS)  # three leases long: renewed by the passes
        assert not waiting.done()
        assert await store.acquire_lease("m", "other", ttl_seconds=30, now=time.time()) is None
        # another process logs a feedback: no wake-up from this process, a pass finds it
        await store.put_events("m", [("e", "p")], now=time.time(), ttl_seconds=10)
        await store.append_feedback("m", "e", "{}", now=time.time())
        renewed, lost = await asyncio.wait_for(waiting, 10)
        assert not lost and renewed > 0
        # caught up at offset 1, then an operator write revokes the lease: woken as lost
        wake.clear()
        waiting = asyncio.create_task(
            idle.wait("m", wake, token=token, offset=1, renewed=time.monotonic())
        )
        await store.save_checkpoint(
            "m", version=1, blob=b"x", keep=5, now=time.time(), offset=1, acked_at=0.0, token=-1
        )
        assert (await asyncio.wait_for(waiting, 10))[1] is True
    finally:
        await idle.stop()
        await store.close()
