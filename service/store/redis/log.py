"""The feedback log in Redis: the Stream ``log:{name}`` with ids ``<offset>-0``.

Fields: ``e`` (event id), ``d`` (decision), ``f`` (feedback JSON, absent for an expired
decision), ``t`` (acknowledged at).  The last offset ever appended is ``log_last`` in
``ctr:{name}``; appends come with a claimed decision (:mod:`.decisions`).

When feedback waits for replicas (:attr:`RedisBase.wait_replicas`), a read gives only
entries a replica holds too: the ``XRANGE`` is followed, on the same connection, by a
small write (``sync:{name}``, expiring) and ``WAIT``, which returns once the replicas
hold everything the master had at that write, the entries read included.  A learner
therefore never applies an entry that a failover could take back (and whose offset a
later entry could then take); a read the replicas do not acknowledge in time is
StoreUnavailable, and the learner reads again later.
"""

from __future__ import annotations

from typing import Any

from service.store.base import LogBounds, LogChunk, LogEntry, StoreUnavailable
from service.store.protocols import LogStore
from service.store.redis.client import RedisBase, text, unavailable


def _entry(entry_id: Any, fields: Any) -> LogEntry:
    """A stream entry as redis-py parses it (fields a dict) or as sent (a flat list)."""
    if not isinstance(fields, dict):
        if len(fields) == 8 and fields[0] == b"e" and fields[2] == b"d" and fields[4] == b"f":
            # as the scripts write it (e, d, f, t): no dict to build
            return LogEntry(
                int(entry_id.split(b"-", 1)[0]),
                fields[1].decode(),
                fields[3].decode(),
                fields[5].decode(),
                float(fields[7]),
            )
        fields = dict(zip(fields[::2], fields[1::2], strict=True))
    feedback = fields.get(b"f")
    return LogEntry(
        int(text(entry_id).split("-")[0]),
        text(fields[b"e"]),
        text(fields[b"d"]),
        None if feedback is None else text(feedback),
        float(fields[b"t"]),
    )


def _chunk(found: Any) -> LogChunk:
    """The stream entries of an ``XRANGE`` as a :class:`LogChunk`: columns straight from
    the fields as the scripts write them (e, d, f, t), else entry by entry."""
    if all(
        not isinstance(fields, dict) and len(fields) == 8
        and fields[0] == b"e" and fields[2] == b"d" and fields[4] == b"f"
        for _, fields in found
    ):  # fmt: skip
        return LogChunk(
            [int(entry_id.split(b"-", 1)[0]) for entry_id, _ in found],
            [fields[1].decode() for _, fields in found],
            [fields[3].decode() for _, fields in found],
            [fields[5].decode() for _, fields in found],
            [float(fields[7]) for _, fields in found],
        )
    return LogChunk.of([_entry(entry_id, fields) for entry_id, fields in found])


class RedisLog(RedisBase, LogStore):
    """Read the log and its bounds."""

    @unavailable
    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        found = await self._range(name, after, limit)
        return [_entry(entry_id, fields) for entry_id, fields in found]

    @unavailable
    async def read_log_chunk(self, name: str, *, after: int, limit: int) -> LogChunk:
        return _chunk(await self._range(name, after, limit))

    async def _range(self, name: str, after: int, limit: int) -> Any:
        """The stream entries after ``after`` (at most ``limit``), as the wire parses them."""
        key, start = self._key("log", name), f"{after + 1}-0"
        waits = self.wait_replicas or 0
        found: Any
        if not waits:
            if self._log_wire is not None:  # a connection of the log's own: parsed by hiredis
                (found,) = await self._log_wire.execute(("XRANGE", key, start, "+", "COUNT", limit))
            else:
                found = await self.client.xrange(key, start, "+", limit)
            return found or ()
        sync = ("SET", self._key("sync", name), b"1", "PX", 60_000)
        found, _, acked = await self._one_connection(
            key,
            [
                ("XRANGE", key, start, "+", "COUNT", limit),
                sync,
                ("WAIT", waits, self.wait_timeout_ms),
            ],
        )
        if int(acked) < waits:
            raise StoreUnavailable(
                f"redis: {waits} replica(s) did not acknowledge the log of {name!r} "
                f"within {self.wait_timeout_ms} ms"
            )
        return found or ()

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
