"""A learner's reads of its log: the next batch is fetched while the last one is applied.

The learner applies a batch in a worker thread; meanwhile the event loop has nothing to
do for it but wait.  :class:`LogReader` starts the read of the entries after a full
batch as soon as that batch is handed out, so the store's round trip (and the decoding
of its reply) overlap the learning.  A batch learned in several slices is read once: the
rest of it is handed out from memory (the log never changes below its end), and the read
ahead waits for the learner to reach its start; a read ahead is dropped (and read
again) only when the learner goes on from elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from service.store import LogChunk


def _retrieve(task: asyncio.Task[LogChunk]) -> None:
    """A dropped read's failure is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


class LogReader:
    """Batches of log entries after an offset, one read kept ahead."""

    def __init__(self, read: Callable[[int], Awaitable[LogChunk]], batch: int) -> None:
        self._read, self.batch = read, batch
        self._ahead: tuple[int, asyncio.Task[LogChunk]] | None = None
        self._last = LogChunk.empty()  # the batch handed out last

    async def next(self, offset: int) -> LogChunk:
        """The entries after ``offset``: the rest of the last batch when only part of it
        was learned (a batch is never read twice: under load one takes several slices),
        else the read ahead when it starts there, else a read."""
        last = self._last
        if last and last.offsets[0] <= offset < last.offsets[-1]:
            self._last = last.after(offset)
            return self._last
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            start, task = ahead
            if start == offset:
                self._last = await task
                return self._last
            task.cancel()
        self._last = await self._read(offset)
        return self._last

    def read_ahead(self, entries: LogChunk) -> None:
        """Start reading after ``entries`` when they were a full batch (more may follow)."""
        if len(entries) < self.batch or self._ahead is not None:
            return
        start = entries.offsets[-1]
        task = asyncio.ensure_future(self._read(start))
        task.add_done_callback(_retrieve)
        self._ahead = (start, task)

    def close(self) -> None:
        """Drop the read ahead, if any."""
        ahead, self._ahead = self._ahead, None
        self._last = LogChunk.empty()
        if ahead is not None:
            with contextlib.suppress(Exception):
                ahead[1].cancel()
