"""A discovery pass that read the model list before a create or delete of this process.

The pass is held right after it read the list; the create (or delete) runs meanwhile;
the pass then finishes.  It must neither drop the new model (runtime, learner, metric
series) nor start a learner for the deleted one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from service.domain.registry import ModelRegistry
from service.domain.schemas import ModelCreate
from service.settings import Settings
from service.store import SqliteStore, Store
from service.telemetry.metrics import ServiceMetrics

pytestmark = pytest.mark.anyio
MODEL = ModelCreate(n_features=2, n_actions=2, accumulate=1)


class HeldList:
    """Wraps ``store.load_models``: the next read waits for :meth:`release` once done."""

    def __init__(self, store: Store) -> None:
        self.read, self.go = asyncio.Event(), asyncio.Event()
        self._load = store.load_models
        store.load_models = self.load  # type: ignore[method-assign]

    async def load(self) -> dict[str, str]:
        found = await self._load()
        self.read.set()
        await self.go.wait()
        return found


async def _registry(tmp_path: Path) -> ModelRegistry:
    settings = Settings(data_dir=tmp_path, lease_seconds=1.0)
    registry = ModelRegistry(
        store=SqliteStore(tmp_path), settings=settings, metrics=ServiceMetrics()
    )
    await registry.start()
    return registry


def _lease_held(registry: ModelRegistry, name: str) -> float | None:
    return registry.metrics.registry.get_sample_value(
        "banditree_learner_lease_held", {"model": name}
    )


async def test_a_model_created_after_the_list_was_read_is_kept(tmp_path: Path) -> None:
    registry = await _registry(tmp_path)
    try:
        held = HeldList(registry.store)
        passing = asyncio.create_task(registry.discover())
        await held.read.wait()
        await registry.create("late", MODEL)
        held.go.set()
        await passing
        assert "late" in registry.runtimes and "late" in registry.learners
        learner = registry.learners["late"]
        for _ in range(100):  # the learner takes its lease
            if _lease_held(registry, "late") == 1.0:
                break
            await asyncio.sleep(0.05)
        assert _lease_held(registry, "late") == 1.0
        await registry.discover()  # the next pass sees it in the store and keeps it
        assert registry.learners["late"] is learner and _lease_held(registry, "late") == 1.0
    finally:
        await registry.close()
        await registry.store.close()


async def test_a_model_deleted_after_the_list_was_read_is_not_learned_again(
    tmp_path: Path,
) -> None:
    registry = await _registry(tmp_path)
    try:
        await registry.create("old", MODEL)
        held = HeldList(registry.store)
        passing = asyncio.create_task(registry.discover())
        await held.read.wait()
        await registry.delete("old")
        held.go.set()
        await passing
        assert "old" not in registry.learners and "old" not in registry.runtimes
        assert await registry.store.load_model("old") is None
    finally:
        await registry.close()
        await registry.store.close()


async def test_the_cap_counts_models_through_a_discovery_pass(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, lease_seconds=1.0, max_models=3)
    registry = ModelRegistry(
        store=SqliteStore(tmp_path), settings=settings, metrics=ServiceMetrics()
    )
    await registry.start()
    try:
        held = HeldList(registry.store)
        passing = asyncio.create_task(registry.discover())
        await held.read.wait()
        for name in ("a", "b", "c"):
            await registry.create(name, MODEL)
        held.go.set()
        await passing
        assert sorted(registry.runtimes) == ["a", "b", "c"]
        with pytest.raises(Exception, match="max_models=3"):
            await registry.create("d", MODEL)
    finally:
        await registry.close()
        await registry.store.close()
