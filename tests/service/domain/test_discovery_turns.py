"""Discovery over thousands of models lets requests run, also when it has nothing to do.

A pass compares the store's list of names with the models this process serves and
learns.  With 10,000 models and nothing to change, that comparison held the event loop
for 8-21 ms of CPU at a time (measured with ``benchmarks.stall_probe``): the pass took
a turn of the loop only before a store call.  It now takes one every
few hundred names it looks at.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from service.domain.registry import ModelRegistry, learning
from service.domain.runtime.tasks import LoopShare
from service.settings import load_settings
from service.store import SqliteStore
from service.telemetry.metrics import ServiceMetrics

pytestmark = pytest.mark.anyio
MODELS = 20_000


async def test_a_pass_with_nothing_to_do_turns_the_loop_every_few_hundred_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SqliteStore(tmp_path)
    registry = ModelRegistry(
        store=store, settings=load_settings(data_dir=tmp_path), metrics=ServiceMetrics()
    )
    names = [f"m{i}" for i in range(MODELS)]
    held: dict[str, Any] = dict.fromkeys(names)
    registry.runtimes, registry.learners, registry.records = dict(held), dict(held), dict(held)
    # every turn the pass is willing to take is taken (a slice already spent)
    monkeypatch.setattr(learning, "LoopShare", lambda: LoopShare(0.0))
    ticks = 0

    async def other() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(other())
    await asyncio.sleep(0)
    try:
        await registry._reconcile(dict.fromkeys(names, "{}"), registry.generation)
    finally:
        ticking.cancel()
        await store.close()
    # a turn at least every 256 names, in each of five looks over every name (served?
    # learned? then each map of what this process holds against the list)
    assert ticks >= 5 * MODELS // 256, ticks
    assert list(registry.learners) == names and list(registry.runtimes) == names


async def test_a_pass_reads_the_list_only_after_a_record_was_saved_or_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading and comparing 10,000 records every second held the loop (and, in the
    reading thread, the GIL) for tens of ms: a pass that finds the store's count of
    record changes where a whole pass left it, in the same epoch, stops there."""
    store = SqliteStore(tmp_path)
    registry = ModelRegistry(
        store=store, settings=load_settings(data_dir=tmp_path), metrics=ServiceMetrics()
    )
    registry.epoch = await store.epoch()
    reads = []
    load_models = store.load_models

    async def counted() -> dict[str, str]:
        reads.append(1)
        return await load_models()

    monkeypatch.setattr(store, "load_models", counted)
    try:
        for _ in range(3):
            await registry.discover()
        assert len(reads) == 1
        await store.delete_model("elsewhere")  # a record change, as another process makes
        await registry.discover()
        await registry.discover()
        assert len(reads) == 2
        await store.new_epoch(changes=registry.store_changes)  # the data lost: a whole pass
        await registry.discover()
        assert len(reads) == 3
    finally:
        await store.close()
