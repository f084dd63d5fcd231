"""The feedback log in the embedded store: the ``log`` table, offsets from ``counters``."""

from __future__ import annotations

import contextlib
import functools
import operator
import sqlite3
from typing import cast

import orjson

from service.store.base import LogBounds, LogChunk, LogEntry
from service.store.protocols import LogStore
from service.store.sqlite.connection import SqliteBase


def append_entry(
    db: sqlite3.Connection, name: str, event_id: str, payload: str, fb: str | None, now: float
) -> int:
    """Append one entry (``fb`` None: an expired decision) under the next offset; that offset."""
    db.execute(
        "INSERT INTO counters(model, log_last) VALUES (?, 1) "
        "ON CONFLICT(model) DO UPDATE SET log_last = log_last + 1",
        (name,),
    )
    offset = int(db.execute("SELECT log_last FROM counters WHERE model = ?", (name,)).fetchone()[0])
    db.execute(
        "INSERT INTO log(model, offset, event_id, decision, feedback, acked_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (name, offset, event_id, payload, fb, now),
    )
    return offset


_READ_ROWS = (
    "SELECT offset, event_id, decision, feedback, acked_at FROM log "
    "WHERE model = ? AND offset > ? ORDER BY offset LIMIT ?"
)
#: the same entries in one row: a JSON text ``[[offset, event_id, feedback, acked_at],
#: ...]`` (``acked_at`` a string), the decisions' texts joined by :data:`_SEPARATOR` in
#: the same order, and whether every ``acked_at`` is exact (NULL: no entry).  Python's
#: ``sqlite3`` lets go of the interpreter lock around each row's step and takes it back
#: after: a read of 512 rows on the event loop handed the lock back and forth 512 times
#: with the learner's thread, which then learned a third slower.  One row is one
#: hand-off (the figures: ``docs/decisions/0005-sqlite-store.md``).  The decisions (the bulk of an entry, JSON with
#: dozens of quotes) are joined as they are rather than escaped into the JSON text and
#: unescaped by its parse: SQLite's part of the read takes less time.  SQLite writes a
#: REAL with 17 significant digits exactly between 1e-30 and 1e30 (no miss found in
#: random draws; misses beyond): outside it the rows are read as before.
_READ_AS_JSON = (
    "SELECT json_group_array(json_array(offset, event_id, feedback, "
    "printf('%!.17g', acked_at))), group_concat(decision, char(30)), "
    "min(acked_at = 0 OR abs(acked_at) BETWEEN 1e-30 AND 1e30) "
    f"FROM ({_READ_ROWS})"
)
#: between two decisions of :data:`_READ_AS_JSON`: JSON holds it only escaped, and a
#: decision that holds one anyway adds a part to the split, whose count then differs
#: from the entries' (that batch is read row by row)
_SEPARATOR = "\x1e"
_offset = operator.attrgetter("offset")
#: the times of :data:`_READ_CHUNK` in units of 2**-22 seconds: a whole number for
#: every time from 2**30 seconds (2004) on, read exactly as an integer and divided
#: exactly (SQLite's ``printf('%!.17g')`` took 1.5 us an entry, a third of the read)
_TIME_SCALE = 1 << 22
#: the entries of :data:`_READ_ROWS` as the learner's columns (:class:`LogChunk`), one
#: row: the first and last offsets (the offsets of a log are consecutive but where the
#: store lost entries: a chunk whose count differs from its span is read as
#: :meth:`SqliteLog.read_log` reads it), the event ids, decisions and feedbacks joined by
#: :data:`_SEPARATOR` (an expiry's feedback as empty, told from an empty text by the
#: count of feedbacks and of empty ones: a chunk that holds both is read as ``read_log``
#: reads it), the times as whole numbers of :data:`_TIME_SCALE` and whether every one is
#: positive and whole (else the chunk is read as ``read_log`` reads it: -0.0 is not
#: whole, nor a time beyond 2**40 seconds), and the count; a text that holds the
#: separator makes its column's split longer than the count (that chunk is read by
#: ``read_log`` too).  No step an entry in Python but the splits and the times' division
#: (the checks of each offset and time took a third of the chunk's read,
#: ``benchmarks/results/native_kernel.md``).
_READ_CHUNK = (
    "SELECT min(offset), max(offset), group_concat(event_id, char(30)), "
    "group_concat(decision, char(30)), group_concat(ifnull(feedback, ''), char(30)), "
    "count(feedback), sum(feedback = ''), "
    f"json_group_array(CAST(acked_at * {_TIME_SCALE} AS INTEGER)), "
    f"min(acked_at > 0 AND CAST(acked_at * {_TIME_SCALE} AS INTEGER) = acked_at * {_TIME_SCALE}), "
    "count(*) "
    f"FROM ({_READ_ROWS})"
)


@functools.cache
def one_row_reads() -> bool:
    """Whether this SQLite has the JSON functions of :data:`_READ_AS_JSON` (built in
    since 3.38; an older library built without them reads rows)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("SELECT json_group_array(json_array(1, printf('%!.17g', 0.5)))")
    except sqlite3.Error:
        return False
    return True


class SqliteLog(SqliteBase, LogStore):
    """Read the log (appends come with a claimed decision: :mod:`.decisions`)."""

    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        args = (name, after, limit)
        if one_row_reads():
            text, joined, exact = self._query(_READ_AS_JSON, args)
            if exact is None:  # no entry
                return []
            rows, decisions = orjson.loads(text), joined.split(_SEPARATOR)
            if exact and len(decisions) == len(rows):
                # both aggregates take the rows in one order: the subquery's (one pass)
                entries = [
                    LogEntry(o, e, d, f, float(at))
                    for (o, e, f, at), d in zip(rows, decisions, strict=True)
                ]
                entries.sort(key=_offset)
                return entries
        rows = self._tx(lambda db: db.execute(_READ_ROWS, args).fetchall())
        return [LogEntry(*row) for row in rows]

    async def read_log_chunk(self, name: str, *, after: int, limit: int) -> LogChunk:
        if one_row_reads():
            row = self._query(_READ_CHUNK, (name, after, limit))
            if not row[-1]:
                return LogChunk.empty()
            chunk = _chunk(*row)
            if chunk is not None:
                return chunk
        return LogChunk.of(await self.read_log(name, after=after, limit=limit))

    async def log_bounds(self, name: str) -> LogBounds:
        def work(db: sqlite3.Connection) -> LogBounds:
            first, length = db.execute(
                "SELECT MIN(offset), COUNT(*) FROM log WHERE model = ?", (name,)
            ).fetchone()
            last = db.execute(
                "SELECT log_last, decisions FROM counters WHERE model = ?", (name,)
            ).fetchone()
            last, decisions = last if last else (0, 0)
            return LogBounds(int(first or 0), int(last), int(length), int(decisions))

        return self._tx(work)


def _chunk(
    first: int,
    last: int,
    ids: str | None,
    decisions: str | None,
    feedbacks: str | None,
    given: int,
    empty: int | None,
    times: str,
    exact: int,
    n: int,
) -> LogChunk | None:
    """The :class:`LogChunk` of one :data:`_READ_CHUNK` row of ``n`` entries, or None
    when it is not read in one step (see :data:`_READ_CHUNK`)."""
    if type(first) is not int or type(last) is not int or ids is None or decisions is None:
        return None
    if not exact or last - first + 1 != n or (given < n and empty) or feedbacks is None:
        return None
    try:
        ticks = orjson.loads(times)
    except orjson.JSONDecodeError:
        return None
    texts = decisions.split(_SEPARATOR)
    events = ids.split(_SEPARATOR)
    marked = cast(list[str | None], feedbacks.split(_SEPARATOR))
    if not (len(ticks) == len(texts) == len(events) == len(marked) == n):
        return None
    if given < n:  # an expiry's feedback was read as empty (no empty text in the chunk)
        marked = [f or None for f in marked]
    acked = [t / _TIME_SCALE for t in ticks]  # exact: whole (SQLite's check) over 2**22
    return LogChunk(list(range(first, last + 1)), events, texts, marked, acked)
