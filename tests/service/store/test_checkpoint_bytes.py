"""Checkpoint retention is bounded in bytes as well as in count (issue 41, item 2), and
the embedded store keeps free space for decisions and feedback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from service.store import SqliteStore, Store, StoreFull

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def _save(store: Store, token: int, size: int, version: int) -> None:
    await store.save_checkpoint(
        "m", version=version, blob=bytes([version % 256]) * size, keep=20, now=T0,
        offset=version, acked_at=T0, token=token,
    )  # fmt: skip


async def test_kept_checkpoints_stay_within_their_byte_budget(store: Store) -> None:
    """20 may be kept, 10,000 bytes: of 1,500-byte checkpoints the newest 6 stay; one
    larger than the budget stays alone (the newest is always kept)."""
    store.keep_bytes = 10_000  # type: ignore[union-attr]
    await store.hold_model("m")
    token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert token is not None
    for version in range(1, 13):
        await _save(store, token, 1_500, version)
        listed = await store.list_checkpoints("m")
        assert sum(i.size_bytes for i in listed) <= 10_000
    assert [i.version for i in listed] == list(range(12, 6, -1))
    await _save(store, token, 12_000, 13)
    assert [i.version for i in await store.list_checkpoints("m")] == [13]
    await _save(store, token, 1_500, 14)  # the large one goes as soon as a new one is in
    assert [i.version for i in await store.list_checkpoints("m")] == [14]


async def test_a_checkpoint_that_would_eat_the_guarded_space_is_refused(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path, min_free_bytes=1)
    try:
        await store.hold_model("m")
        await store.ping()
        token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
        assert token is not None
        await _save(store, token, 1_000, 1)
        # a guard 10 MB under what is free now: a 50 MB checkpoint would take it
        stat = os.statvfs(tmp_path)
        store.min_free_bytes = stat.f_bavail * stat.f_frsize - 10_000_000
        with pytest.raises(StoreFull, match="BANDITREE_MIN_FREE_BYTES"):
            await _save(store, token, 50_000_000, 2)
        assert [i.version for i in await store.list_checkpoints("m")] == [1]  # kept
        await store.ping()  # still above the guard: ready
        store.min_free_bytes = stat.f_bavail * stat.f_frsize + (1 << 30)
        with pytest.raises(StoreFull):
            await store.ping()
    finally:
        await store.close()
