"""A learner's log reads: the batch after a full one is read while that one is learned."""

from __future__ import annotations

import asyncio

import pytest

from service.domain.runtime.log_reader import LogReader
from service.store import LogChunk, LogEntry

pytestmark = pytest.mark.anyio


def _entries(first: int, count: int) -> LogChunk:
    return LogChunk.of([LogEntry(o, f"e{o}", "d", "{}", 0.0) for o in range(first, first + count)])


async def test_the_next_batch_is_read_ahead_and_dropped_when_not_used() -> None:
    reads: list[int] = []

    async def read(after: int) -> LogChunk:
        reads.append(after)
        await asyncio.sleep(0)
        return _entries(after + 1, min(3, 8 - after)) if after < 8 else _entries(0, 0)

    reader = LogReader(read, batch=3)
    first = await reader.next(0)
    reader.read_ahead(first)  # a full batch: the read after offset 3 starts now
    await asyncio.sleep(0.01)
    assert reads == [0, 3]
    assert (await reader.next(3)).offsets == [4, 5, 6]  # no new read
    assert reads == [0, 3]
    reader.read_ahead(_entries(4, 3))
    # the learner goes on from elsewhere: the read ahead (after 6) is dropped, unread
    assert (await reader.next(2)).offsets == [3, 4, 5]
    reader.read_ahead(_entries(3, 3))
    await asyncio.sleep(0.01)
    assert reads == [0, 3, 2, 5]
    assert (await reader.next(5)).offsets == [6, 7, 8]
    reader.read_ahead(_entries(6, 3))
    await asyncio.sleep(0.01)
    assert reads == [0, 3, 2, 5, 8]
    reader.close()


async def test_a_batch_learned_in_several_slices_is_read_once() -> None:
    """Under load a batch takes several slices: its rest comes from memory, and the read
    ahead started when it was handed out is what follows it."""
    reads: list[int] = []

    async def read(after: int) -> LogChunk:
        reads.append(after)
        await asyncio.sleep(0)
        return _entries(after + 1, min(4, 10 - after)) if after < 10 else _entries(0, 0)

    reader = LogReader(read, batch=4)
    offset, learned = 0, []
    while entries := await reader.next(offset):
        reader.read_ahead(entries)
        learned += entries.offsets[:3]  # a slice learns at most 3 entries
        offset = learned[-1]
    assert learned == list(range(1, 11))
    assert reads == [0, 4, 8, 10]  # each entry read once, then the empty read at the end
    reader.close()
