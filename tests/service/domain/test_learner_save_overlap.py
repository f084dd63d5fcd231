"""A learner saves a checkpoint while its next slice learns: the save's outcome is still
taken (a refused save loses the lease), and the learner idles or fails only after it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.log_scale import CONFIG, UID, fill, make_pairs
from service.domain.runtime.idle import IdleLearners
from service.domain.runtime.learner import LearnerPolicy, ModelLearner
from service.store import FencedOut, SqliteStore
from service.telemetry.metrics import ServiceMetrics

pytestmark = pytest.mark.anyio

SAVE_SECONDS = 0.2


class SlowSaves(SqliteStore):
    """Saves after the initial checkpoint take ``seconds``, and are refused when
    ``refuse`` is set: each one's (start, end) is noted."""

    refuse = False

    def __init__(self, path: Path, seconds: float = SAVE_SECONDS) -> None:
        super().__init__(path)
        self.seconds = seconds
        self.saves: list[tuple[float, float]] = []

    async def save_checkpoint(self, name: str, **kw: Any) -> Any:
        if kw["offset"] == 0:
            return await super().save_checkpoint(name, **kw)
        started = time.monotonic()
        await asyncio.sleep(self.seconds)
        try:
            if self.refuse:
                raise FencedOut("a newer token was issued")
            return await super().save_checkpoint(name, **kw)
        finally:
            self.saves.append((started, time.monotonic()))


def _learner(store: SqliteStore, idle: IdleLearners) -> tuple[ModelLearner, list[float]]:
    """A learner publishing after every update, with the start of each slice noted."""
    learner = ModelLearner(
        name="m", uid=UID, config=CONFIG,
        policy=LearnerPolicy(every_updates=1, every_seconds=60.0, keep=3, default_loss=None,
                             lease_seconds=3.0),
        store=store, metrics=ServiceMetrics().for_model("m"), holder="h", idle=idle,
    )  # fmt: skip
    slices: list[float] = []
    apply = learner._apply

    def noted(*args: Any) -> tuple[int, int]:
        slices.append(time.monotonic())
        return apply(*args)

    learner._apply = noted  # type: ignore[method-assign,assignment]
    return learner, slices


async def test_the_next_slice_learns_while_a_checkpoint_is_saved(tmp_path: Path) -> None:
    store = SlowSaves(tmp_path)
    idle = IdleLearners(store, holder="h", lease_seconds=3.0)
    pairs = make_pairs(3000)
    try:
        await fill(store, pairs, time.time())
        learner, slices = _learner(store, idle)
        learner.start()
        await asyncio.wait_for(learner.reached(len(pairs)), timeout=60)
        assert learner.offset == len(pairs)
        # idle only once the last checkpoint is in the store
        while not learner.idle._parked:
            await asyncio.sleep(0.01)
        (newest,) = await store.list_checkpoints("m", limit=1)
        assert newest.offset == len(pairs)
        assert any(start < t < end for start, end in store.saves for t in slices)
        await learner.stop()
    finally:
        await idle.stop()
        await store.close()


async def test_a_save_refused_while_the_lead_goes_on_loses_the_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SlowSaves(tmp_path)
    store.refuse = True
    idle = IdleLearners(store, holder="h", lease_seconds=3.0)
    pairs = make_pairs(3000)
    try:
        await fill(store, pairs, time.time())
        learner, _ = _learner(store, idle)
        learner.start()
        while not store.saves:
            await asyncio.sleep(0.01)
        await asyncio.sleep(SAVE_SECONDS)  # the lead takes the refusal
        failures = learner.metrics.checkpoint_failures._value.get()
        assert failures >= 1
        assert "lost model m" in caplog.text
        assert (await store.list_checkpoints("m", limit=1))[0].offset == 0
        await learner.stop()
        # every refused save was waited for and counted, none left behind
        assert learner._saving is None
        assert learner.metrics.checkpoint_failures._value.get() == len(store.saves)
    finally:
        await idle.stop()
        await store.close()


async def test_a_failed_slice_waits_for_the_save_under_way(tmp_path: Path) -> None:
    store = SlowSaves(tmp_path, seconds=1.5)  # longer than the wait before a retry
    idle = IdleLearners(store, holder="h", lease_seconds=3.0)
    pairs = make_pairs(3000)
    try:
        await fill(store, pairs, time.time())
        learner, slices = _learner(store, idle)
        apply = learner._apply

        def second_fails(*args: Any) -> tuple[int, int]:
            if len(slices) == 1:  # the slice after the first save started
                slices.append(time.monotonic())
                raise RuntimeError("a slice failed")
            return apply(*args)

        learner._apply = second_fails  # type: ignore[method-assign,assignment]
        acquired: list[float] = []
        acquire = store.acquire_lease

        async def noted_acquire(*args: Any, **kw: Any) -> Any:
            acquired.append(time.monotonic())
            return await acquire(*args, **kw)

        store.acquire_lease = noted_acquire  # type: ignore[method-assign,assignment]
        learner.start()
        while len(acquired) < 2:  # restarted after the failure
            await asyncio.sleep(0.01)
        failed_at = slices[1]
        (first_save, *_) = store.saves
        assert first_save[0] < failed_at < first_save[1]  # the save was under way
        assert acquired[1] >= first_save[1]  # and done before the learner started over
        await learner.stop()
    finally:
        await idle.stop()
        await store.close()
