"""The feedback log in Redis: the Stream ``log:{name}`` with ids ``<offset>-0``.

Fields: ``e`` (event id), ``d`` (decision), ``f`` (feedback JSON, absent for an expired
decision), ``t`` (acknowledged at).  The last offset ever appended is ``log_last`` in
``ctr:{name}``; appends come with a claimed decision (:mod:`.decisions`).
"""

from __future__ import annotations

from typing import Any

from service.store.base import LogBounds, LogEntry
from service.store.protocols import LogStore
from service.store.redis.client import RedisBase, text, unavailable


class RedisLog(RedisBase, LogStore):
    """Read the log and its bounds."""

    @unavailable
    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        found: Any = await self.client.xrange(self._key("log", name), f"{after + 1}-0", "+", limit)
        entries = []
        for entry_id, fields in found or ():
            feedback = fields.get(b"f")
            entries.append(
                LogEntry(
                    int(text(entry_id).split("-")[0]),
                    text(fields[b"e"]),
                    text(fields[b"d"]),
                    None if feedback is None else text(feedback),
                    float(fields[b"t"]),
                )
            )
        return entries

    @unavailable
    async def log_bounds(self, name: str) -> LogBounds:
        key = self._key("log", name)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.xlen(key)
            pipe.xrange(key, "-", "+", 1)
            pipe.hmget(self._key("ctr", name), ["log_last", "decisions"])
            length, first, (last, decisions) = await pipe.execute()
        first_offset = int(text(first[0][0]).split("-")[0]) if first else 0
        return LogBounds(first_offset, int(last or 0), int(length), int(decisions or 0))
