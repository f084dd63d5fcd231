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


class CountingStore:
    """A lease store whose idle scan answers "idle" for every learner, noting each call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def scan_idle(self, holder: str, idle: list[Any], **_: Any) -> dict[str, str]:
        self.calls.append([learner.name for learner in idle])
        return {learner.name: "idle" for learner in idle}

    def scanned(self) -> list[str]:
        names = [name for call in self.calls for name in call]
        self.calls.clear()
        return names


def _park_cold(idle: IdleLearners, names: list[str], renewed: float) -> None:
    """Learners parked long ago, looked at in the order of ``names`` (oldest look first)."""
    from service.domain.runtime import idle as idle_module

    for name in names:
        idle._parked[name] = idle_module._Parked(asyncio.Event(), 1, 0, renewed, since=-1e9)
        idle._cold[name] = None


async def test_a_pass_over_thousands_of_learners_turns_the_loop_while_it_picks_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ordering 10,000 parked learners by their last renewal held the event loop 8-9 ms of
    CPU at once (``benchmarks.scale.stall_probe``, 10,000 models): picking them takes a
    turn of the loop every few hundred learners, before the pass's first store call."""
    from service.domain.runtime import idle as idle_module
    from service.domain.runtime.tasks import LoopShare

    parked, ticks, at_first_call = 20_000, [0], []
    store = CountingStore()
    scan = store.scan_idle

    async def noting(holder: str, idle: list[Any], **kw: Any) -> dict[str, str]:
        at_first_call.append(ticks[0])
        return await scan(holder, idle, **kw)

    store.scan_idle = noting  # type: ignore[method-assign]

    async def other() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    idle = IdleLearners(store, holder="h", lease_seconds=30.0)  # type: ignore[arg-type]
    _park_cold(idle, [f"m{i}" for i in range(parked)], renewed=-1e6)  # all overdue
    monkeypatch.setattr(idle_module, "LoopShare", lambda: LoopShare(0.0))  # every turn taken
    ticking = asyncio.create_task(other())
    await asyncio.sleep(0)
    started = time.monotonic()
    try:
        await idle._pass(started)
    finally:
        ticking.cancel()
    assert at_first_call[0] - 1 >= parked // 512, at_first_call[0]  # a turn every 512 at most
    first = store.calls[0]
    assert all(p.renewed == started for p in idle._parked.values())  # every lease renewed
    assert first[:3] == ["m0", "m1", "m2"]  # looked at longest ago first
    assert list(idle._cold)[-1] == f"m{parked - 1}"  # and to the back once looked at


async def test_a_pass_looks_at_the_active_learners_and_a_slice_of_the_idle_ones() -> None:
    """Issue 41: a pass over 9,461 idle learners took 1.75 s, over a third of the 3 s
    lease: every pass looked at every parked learner.  It now looks at the learners
    parked lately every time and at the idle ones in turn: each idle one about once per
    0.9 x a third of the lease, every lease renewed within a third."""
    from service.domain.runtime import idle as idle_module

    store = CountingStore()
    lease = 3.0
    idle = IdleLearners(store, holder="h", lease_seconds=lease)  # type: ignore[arg-type]
    start = time.monotonic()
    cold = [f"idle{i}" for i in range(4000)]
    _park_cold(idle, cold, renewed=start)
    for i in range(5):  # in use: parked a moment ago
        name = f"busy{i}"
        idle._parked[name] = idle_module._Parked(asyncio.Event(), 1, 0, start, since=start)
        idle._hot[name] = None
    period = idle._cold_period()
    step = period / idle_module._PASSES_PER_PERIOD
    idle._last_pass = start - step
    looked: dict[str, list[float]] = {}
    for k in range(3 * idle_module._PASSES_PER_PERIOD):
        now = start + k * step
        await idle._pass(now)
        names = store.scanned()
        for name in names:
            looked.setdefault(name, []).append(now)
        busy = [n for n in names if n.startswith("busy")]
        assert len(busy) == 5, k  # every pass
        assert len(names) - 5 <= 4000 // idle_module._PASSES_PER_PERIOD + 1, (k, len(names))
        assert all(now - p.renewed <= lease / 3 for p in idle._parked.values()), k
    for name in cold:  # each idle one about once a period: 3 periods, 3 looks
        assert len(looked[name]) == 3, (name, looked[name])


async def test_a_learner_idle_for_long_cools_and_one_parked_again_is_hot() -> None:
    from service.domain.runtime import idle as idle_module

    idle = IdleLearners(CountingStore(), holder="h", lease_seconds=3.0)  # type: ignore[arg-type]
    wake = asyncio.Event()
    waiting = asyncio.create_task(idle.wait("m", wake, token=1, offset=0, renewed=time.monotonic()))
    await asyncio.sleep(0)
    try:
        assert list(idle._hot) == ["m"] and not idle._cold
        await idle._picked(time.monotonic() + idle_module.COLD_AFTER_SECONDS, LoopShare_())
        assert not idle._hot and list(idle._cold) == ["m"]
        wake.set()
        await waiting
        assert not idle._parked and not idle._cold and not idle._hot  # gone with it
    finally:
        await idle.stop()


def LoopShare_() -> Any:
    from service.domain.runtime.tasks import LoopShare

    return LoopShare()
