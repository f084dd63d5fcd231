"""The embedded store reuses the space settled decisions leave (issue 41, item 3).

A decision settled (expired unanswered, or claimed by its feedback) stays as a
tombstone without its payload until its keep-until.  Written by an ``UPDATE``, the
tombstones kept the pages their payloads had filled (SQLite merges the pages a delete
leaves under a third full, never those an update shrinks): each wave of unanswered
decisions grew the file by nearly its own size again, although its payloads were gone.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from service.store import SqliteStore

pytestmark = pytest.mark.anyio

WAVE, PAYLOAD = 20_000, "p" * 300
T0, TTL = 1_000.0, 10.0


def _pages(store: SqliteStore) -> tuple[int, int]:
    """The database's pages, and those on its free list."""
    with sqlite3.connect(store.path) as db:
        return (
            int(db.execute("PRAGMA page_count").fetchone()[0]),
            int(db.execute("PRAGMA freelist_count").fetchone()[0]),
        )


async def _wave(store: SqliteStore, number: int, *, claimed: bool) -> None:
    """``WAVE`` decisions in batches of 250, then every one settled."""
    now = T0 + number * 2 * TTL
    ids = [f"{number:03d}{i:08d}" for i in range(WAVE)]
    for start in range(0, WAVE, 250):
        await store.put_events(
            "m", [(e, PAYLOAD) for e in ids[start : start + 250]], now=now, ttl_seconds=TTL
        )
    if claimed:
        for e in ids:
            assert (await store.append_feedback("m", e, "{}", now=now + 1)).status == "claimed"
    else:
        assert await store.expire_events("m", now=now + TTL + 1, limit=WAVE, log=False) == WAVE


async def test_a_second_wave_reuses_the_pages_the_first_one_freed(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    try:
        await store.hold_model("m")
        await _wave(store, 1, claimed=False)
        first, free = await asyncio.to_thread(_pages, store)
        # the tombstones take a fraction of the pages the payloads filled: the rest is free
        assert free >= 0.6 * first, (free, first)
        await _wave(store, 2, claimed=False)  # the first wave's tombstones still kept
        second, _ = await asyncio.to_thread(_pages, store)
    finally:
        await store.close()
    assert second <= 1.3 * first, (second, first)


def _decision_pages(store: SqliteStore) -> int:
    with sqlite3.connect(store.path) as db:
        try:
            row = db.execute("SELECT COUNT(*) FROM dbstat WHERE name = 'decisions'").fetchone()
        except sqlite3.OperationalError:  # an SQLite built without the dbstat table
            pytest.skip("no dbstat virtual table")
        return int(row[0])


async def test_claimed_decisions_leave_compact_tombstones(tmp_path: Path) -> None:
    """Claimed one by one (their payloads go to the log), the decisions' table shrinks
    to a fraction of the pages their payloads took."""
    store = SqliteStore(tmp_path)
    try:
        await store.hold_model("m")
        await store.put_events("m", [(f"{i:08d}", PAYLOAD) for i in range(4000)], now=T0,
                               ttl_seconds=TTL)  # fmt: skip
        full = await asyncio.to_thread(_decision_pages, store)
        for i in range(4000):
            assert (await store.append_feedback("m", f"{i:08d}", "{}", now=T0)).status == "claimed"
        settled = await asyncio.to_thread(_decision_pages, store)
    finally:
        await store.close()
    assert settled <= 0.5 * full, (settled, full)
