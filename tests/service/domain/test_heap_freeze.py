"""New models' long-lived objects leave the garbage collector's walks once things settle."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import httpx
import pytest

from service.domain.runtime.heap import HeapFreezer
from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio

MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}


def walked(objects: list[object]) -> int:
    """How many of ``objects`` a full collection walks (frozen ones are not among them)."""
    ids = {id(obj) for obj in objects}
    return sum(1 for obj in gc.get_objects() if id(obj) in ids)


async def test_a_burst_of_calls_is_one_freeze_after_a_young_collection() -> None:
    freezer = HeapFreezer(delay_seconds=0.05)
    gc.unfreeze()
    try:
        kept = [[i] for i in range(100)]  # long-lived containers made now
        cycle: list[object] = []
        cycle.append(cycle)  # young garbage: collected, not frozen
        del cycle
        for _ in range(50):
            freezer.soon()
        assert walked(kept) == 100
        await asyncio.sleep(0.2)
        assert freezer.freezes == 1
        assert walked(kept) == 0
        assert not any(
            type(obj) is list and len(obj) == 1 and obj[0] is obj for obj in gc.get_objects(2)
        )
    finally:
        gc.unfreeze()


async def test_a_long_burst_is_frozen_every_so_many_calls_without_waiting() -> None:
    """A freeze's young collection walks all the burst made so far, on the event loop:
    half a second of the swaps after 10,000 creates was 10,000 objects, 13 ms of CPU at
    once.  A freeze runs every ``every_calls`` calls, not only after the delay."""
    freezer = HeapFreezer(delay_seconds=10.0, every_calls=8)
    gc.unfreeze()
    try:
        kept: list[list[int]] = []
        for i in range(32):
            kept.append([i])  # a model's long-lived objects
            freezer.soon()
            await asyncio.sleep(0)  # the loop turns between models
        assert freezer.freezes == 4
        assert walked(kept) == 0  # none waited for the delay
        kept.append([32])
        freezer.soon()  # the next call waits for the delay again
        await asyncio.sleep(0.05)
        assert freezer.freezes == 4 and walked(kept) == 1
    finally:
        freezer.cancel()
        gc.unfreeze()


async def test_models_created_and_learned_after_start_up_are_frozen(tmp_path: Path) -> None:
    app = create_app(load_settings(data_dir=tmp_path))
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            registry = app.state.registry
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                for i in range(20):
                    answer = await http.put(f"/v1/models/heap{i}", json=MODEL)
                    assert answer.status_code == 201, answer.text
                for _ in range(200):  # every learner leads (and has made its objects)
                    if all(learner.token is not None for learner in registry.learners.values()):
                        break
                    await asyncio.sleep(0.05)
                names = [f"heap{i}" for i in range(20)]
                await asyncio.sleep(1.2)  # things settle
                objects = [registry.runtimes[name] for name in names]
                # made by each learner once it leads (with its model's learner state)
                objects += [registry.learners[name]._reader for name in names]
                assert all(obj is not None for obj in objects)
                assert walked(objects) == 0
    finally:
        gc.unfreeze()
