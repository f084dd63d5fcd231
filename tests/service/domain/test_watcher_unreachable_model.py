"""The snapshot watcher refreshes every model although one model's store node is away."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from service.domain.runtime.snapshot import SnapshotWatcher
from service.store import StoreUnavailable

pytestmark = pytest.mark.anyio


class _Notices:
    async def snapshot_notices(self, wait: float) -> set[str]:
        await asyncio.sleep(wait)
        return set()


class _Served:
    def __init__(self, fails: bool) -> None:
        self.fails, self.refreshed = fails, 0

    async def refresh(self) -> bool:
        if self.fails:  # the cluster node holding this model's keys is down
            raise StoreUnavailable("redis: Error 111 connecting to the node")
        self.refreshed += 1
        return False


async def test_a_model_on_a_node_away_does_not_stop_the_others() -> None:
    store = _Notices()
    away = SimpleNamespace(name="away", store=store, served=_Served(fails=True))
    near = SimpleNamespace(name="near", store=store, served=_Served(fails=False))
    watcher = SnapshotWatcher(lambda: [away, near], poll_seconds=0.02)
    watcher.start()
    try:
        await asyncio.sleep(0.5)
    finally:
        await watcher.stop()
    assert near.served.refreshed >= 3
