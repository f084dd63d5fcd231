"""A learner's log reads: the batch after a full one is read while that one is learned."""

from __future__ import annotations

import asyncio

import pytest

from service.runtime.log_reader import LogReader
from service.store import LogEntry

pytestmark = pytest.mark.anyio


def _entries(first: int, count: int) -> list[LogEntry]:
    return [LogEntry(o, f"e{o}", "d", "{}", 0.0) for o in range(first, first + count)]


async def test_the_next_batch_is_read_ahead_and_dropped_when_not_used() -> None:
    reads: list[int] = []

    async def read(after: int) -> list[LogEntry]:
        reads.append(after)
        await asyncio.sleep(0)
        return _entries(after + 1, min(3, 8 - after)) if after < 8 else []

    reader = LogReader(read, batch=3)
    first = await reader.next(0)
    reader.read_ahead(first)  # a full batch: the read after offset 3 starts now
    await asyncio.sleep(0.01)
    assert reads == [0, 3]
    assert [e.offset for e in await reader.next(3)] == [4, 5, 6]  # no new read
    assert reads == [0, 3]
    reader.read_ahead(_entries(4, 3))
    # only part of the batch was applied: the read ahead (after 6) is dropped, unread
    assert [e.offset for e in await reader.next(5)] == [6, 7, 8]
    reader.read_ahead(_entries(7, 2))  # not a full batch: nothing read ahead
    await asyncio.sleep(0.01)
    assert reads == [0, 3, 5]
    reader.close()
