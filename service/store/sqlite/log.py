"""The feedback log in the embedded store: the ``log`` table, offsets from ``counters``."""

from __future__ import annotations

import sqlite3

from service.store.base import LogBounds, LogEntry
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


class SqliteLog(SqliteBase, LogStore):
    """Read the log (appends come with a claimed decision: :mod:`.decisions`)."""

    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        rows = self._tx(
            lambda db: db.execute(
                "SELECT offset, event_id, decision, feedback, acked_at FROM log "
                "WHERE model = ? AND offset > ? ORDER BY offset LIMIT ?",
                (name, after, limit),
            ).fetchall()
        )
        return [LogEntry(*row) for row in rows]

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
