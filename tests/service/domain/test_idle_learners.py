"""Idle learners wait together: their leases are renewed, and work elsewhere wakes them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from service.domain.runtime.idle import IdleLearners
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


def test_a_store_call_of_a_pass_is_sized_to_about_one_loop_slice() -> None:
    from service.domain.runtime.idle import _CHUNK, _MIN_CHUNK, chunk_size
    from service.domain.runtime.tasks import LOOP_SLICE_SECONDS

    per_learner = LOOP_SLICE_SECONDS / 40  # 40 learners fill a slice
    assert chunk_size(128 * per_learner, 128) == 40
    assert chunk_size(per_learner * 10, 10) == 40  # the rate, not the last call's count
    assert chunk_size(1e-9, 128) == _CHUNK  # a fast store: the largest call
    assert chunk_size(1.0, 128) == _MIN_CHUNK  # a very slow one: the smallest
    assert chunk_size(0.0, 5) == _CHUNK


async def test_a_pass_in_small_calls_still_renews_every_lease(tmp_path: Path) -> None:
    """A slow store makes the calls small: every parked learner is still looked at."""
    from service.domain.runtime import idle as idle_module

    store = SqliteStore(tmp_path)
    idle = IdleLearners(store, holder="h", lease_seconds=LEASE_SECONDS)
    idle._chunk = idle_module._MIN_CHUNK  # as after a slow call
    names = [f"m{i}" for i in range(3 * idle_module._MIN_CHUNK + 5)]
    tasks = []
    try:
        for name in names:
            await store.hold_model(name)
            token = await store.acquire_lease(name, "h", ttl_seconds=LEASE_SECONDS, now=time.time())
            assert token is not None
            tasks.append(
                asyncio.create_task(
                    idle.wait(
                        name, asyncio.Event(), token=token, offset=0, renewed=time.monotonic()
                    )
                )
            )
        await asyncio.sleep(3 * LEASE_SECONDS)
        assert not any(t.done() for t in tasks)
        for name in names:  # every lease renewed: nobody else can take one
            assert await store.acquire_lease(name, "x", ttl_seconds=30, now=time.time()) is None
    finally:
        await idle.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()


async def test_a_pass_over_thousands_of_learners_turns_the_loop_while_it_orders_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ordering 10,000 parked learners by their last renewal held the event loop 8-9 ms of
    CPU at once (``benchmarks.stall_probe``, 10,000 models): it now takes a turn of the
    loop every few hundred learners, before the pass's first store call."""
    from service.domain.runtime import idle as idle_module
    from service.domain.runtime.tasks import LoopShare

    parked, ticks, at_first_call, first = 20_000, [0], [], []

    class Store:
        async def scan_idle(self, holder: str, idle: list[Any], **_: Any) -> dict[str, str]:
            at_first_call.append(ticks[0])
            first.extend([] if len(at_first_call) > 1 else [learner.name for learner in idle])
            return {learner.name: "idle" for learner in idle}

    async def other() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    idle = IdleLearners(Store(), holder="h", lease_seconds=30.0)  # type: ignore[arg-type]
    for i in range(parked):  # renewed in reverse order: the last parked is the oldest
        idle._parked[f"m{i}"] = idle_module._Parked(asyncio.Event(), 1, 0, -float(i))
    monkeypatch.setattr(idle_module, "LoopShare", lambda: LoopShare(0.0))  # every turn taken
    ticking = asyncio.create_task(other())
    await asyncio.sleep(0)
    started = time.monotonic()
    try:
        await idle._pass(started)
    finally:
        ticking.cancel()
    assert at_first_call[0] - 1 >= parked // 512, at_first_call[0]  # a turn every 512 at most
    assert all(p.renewed == started for p in idle._parked.values())  # every lease renewed
    assert first[:3] == ["m19999", "m19998", "m19997"]  # renewed longest ago first
