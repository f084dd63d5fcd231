"""Pending decisions in the embedded store: the ``decisions`` table, and ``due``.

A row is ``pending`` until claimed; a claimed row stays as a tombstone (``used`` or
``expired``, without its payload) until ``keep_until``, so a repeat gets a precise answer.
The decision writes of one event-loop tick share one transaction (group commit).

What is due when is kept per commit, not per decision: each commit adds one ``due`` row
per model, listing the event ids it wrote under the latest deadline and keep-until of
them.  An index entry per decision (``decisions (model, state, deadline)``, the layout
before) cost a third of the insert of a batch of 256 decisions, and another write at
every claim; a ``due`` row is one small write per commit.  A ``due`` row is a hint, the
decision rows are the truth: the sweep expires, at stage :data:`DUE_EXPIRE` once the
row's time passed, the listed decisions still pending past their own deadline, then
(stage :data:`DUE_DELETE`, at the row's keep-until) deletes those whose own keep-until
passed.  A decision written again (an activation) is listed by its new commit's row
too, and each pass skips it where its own times have not passed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from typing import Any

import orjson

from service.store.base import EventLookup, StoreBehind, event_deadlines
from service.store.protocols import DecisionStore
from service.store.sqlite.connection import SqliteBase
from service.store.sqlite.log import append_entry
from service.store.sqlite.schema import DUE_DELETE, DUE_EXPIRE

#: event ids looked up per statement (SQLite's bound on variables is 32,766 and up)
_IDS_PER_QUERY = 500
_INSERT = (
    "INSERT OR REPLACE INTO decisions(model, event_id, deadline, keep_until, payload, state) "
    "VALUES (?, ?, ?, ?, ?, 'pending')"
)
_COUNT = (
    "INSERT INTO counters(model, decisions) VALUES (?, ?) "
    "ON CONFLICT(model) DO UPDATE SET decisions = decisions + excluded.decisions"
)
_DUE = "INSERT INTO due(model, stage, at, keep_until, event_ids) VALUES (?, ?, ?, ?, ?)"


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _IDS_PER_QUERY):
        yield ids[start : start + _IDS_PER_QUERY]


def _in(ids: list[str]) -> str:
    return ",".join("?" * len(ids))


def _lookup(db: sqlite3.Connection, name: str, event_id: str, now: float) -> EventLookup:
    row = db.execute(
        "SELECT deadline, keep_until, payload, state FROM decisions "
        "WHERE model = ? AND event_id = ?",
        (name, event_id),
    ).fetchone()
    if row is None or row[1] <= now:
        return EventLookup("unknown")
    deadline, _, payload, state = row
    if state == "pending":
        return EventLookup("pending" if now <= deadline else "expired", payload)
    return EventLookup("duplicate" if state == "used" else "expired")


class SqliteDecisions(SqliteBase, DecisionStore):
    """Store, look up, claim and expire pending decisions."""

    async def put_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> None:
        """Store the decisions in the commit of this event-loop tick (:meth:`queue_events`)."""
        await self.queue_events(name, events, now=now, ttl_seconds=ttl_seconds, counted=counted)

    def queue_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> asyncio.Future[None]:
        """Queue the decisions for the commit of this event-loop tick (group commit).

        Every write queued in one loop tick goes in one transaction, committed in a
        callback queued behind it: each decision is stored before its answer, at the
        cost of one commit per tick instead of one per request.
        """
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        rows = [(name, event_id, deadline, keep_until, payload) for event_id, payload in events]
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._puts.append((rows, counted, done))
        if len(self._puts) == 1:
            loop.call_soon(self._commit_puts)
        return done

    def _commit_puts(self) -> None:
        """Commit the decisions queued in this tick in one transaction; wake their callers."""
        batch, self._puts = self._puts, []
        counts: dict[str, int] = {}
        due: dict[str, tuple[float, float, list[str]]] = {}
        for rows, counted, _ in batch:
            if not rows:
                continue
            name, _, deadline, keep_until, _ = rows[0]  # one request: one model, one time
            if counted:
                counts[name] = counts.get(name, 0) + len(rows)
            at, keep, ids = due.get(name, (deadline, keep_until, []))
            ids += [row[1] for row in rows]
            due[name] = (max(at, deadline), max(keep, keep_until), ids)

        def work(db: sqlite3.Connection) -> None:
            db.executemany(_INSERT, [row for rows, _, _ in batch for row in rows])
            db.executemany(_COUNT, counts.items())
            db.executemany(
                _DUE,
                [(name, DUE_EXPIRE, at, keep, orjson.dumps(ids).decode())
                 for name, (at, keep, ids) in due.items()],
            )  # fmt: skip

        try:
            self._tx(work)
        except Exception as err:
            for _, _, done in batch:
                if not done.done():
                    done.set_exception(err)
            return
        for _, _, done in batch:
            if not done.done():
                done.set_result(None)

    async def put_new_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
    ) -> list[EventLookup]:
        """Looked up and stored in one immediate transaction (its own commit, not the
        tick's: the lookup and the write must not be split)."""
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        ids = [event_id for event_id, _ in events]

        def work(db: sqlite3.Connection) -> list[EventLookup]:
            found = [_lookup(db, name, event_id, now) for event_id in ids]
            if any(lookup.status != "unknown" for lookup in found):
                return found
            rows = [(name, e, deadline, keep_until, payload) for e, payload in events]
            db.executemany(_INSERT, rows)  # REPLACE: a tombstone past its keep-until
            db.execute(_COUNT, (name, len(rows)))
            db.execute(_DUE, (name, DUE_EXPIRE, deadline, keep_until, orjson.dumps(ids).decode()))
            return []

        return self._tx(work) if events else []

    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        return self._tx(lambda db: _lookup(db, name, event_id, now))

    async def peek_events(
        self, name: str, event_ids: list[str], *, now: float
    ) -> list[EventLookup]:
        return self._tx(lambda db: [_lookup(db, name, e, now) for e in event_ids])

    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float, seen: int = 0
    ) -> EventLookup:
        def work(db: sqlite3.Connection) -> EventLookup:
            found = _lookup(db, name, event_id, now)
            if found.status != "pending" or found.payload is None:
                return EventLookup(found.status)
            self._mark(db, name)
            _check_seen(db, name, seen)
            _settle(db, name, [event_id], "used")
            offset = append_entry(db, name, event_id, found.payload, feedback, now)
            return EventLookup("claimed", found.payload, offset)

        return self._tx(work)

    async def expire_events(
        self, name: str, *, now: float, limit: int, log: bool, seen: int = 0
    ) -> int:
        def work(db: sqlite3.Connection) -> int:
            self._mark(db, name)
            if log:
                _check_seen(db, name, seen)
            _delete_tombstones(db, name, now)
            return _expire(db, name, now, limit, log)

        return self._tx(work)

    async def pending_count(self, name: str) -> int:
        # O(pending): counted on a reading connection in a worker thread, off the loop
        rows = await asyncio.to_thread(
            self._read,
            "SELECT COUNT(*) FROM decisions WHERE model = ? AND state = 'pending'",
            (name,),
        )
        return int(rows[0][0])


def _check_seen(db: sqlite3.Connection, name: str, seen: int) -> None:
    """:class:`StoreBehind` when the log of ``name`` ends before offset ``seen``."""
    row = db.execute("SELECT log_last FROM counters WHERE model = ?", (name,)).fetchone()
    last = int(row[0]) if row else 0
    if last < seen:
        raise StoreBehind(
            f"the store's log of model {name!r} ends at {last}, before offset {seen} "
            "this process was given: the database was restored from an older copy"
        )


def _delete_tombstones(db: sqlite3.Connection, name: str, now: float) -> None:
    """Delete the decisions of the ``due`` rows at their keep-until whose own keep-until
    passed (their tombstones), and those ``due`` rows."""
    rows = db.execute(
        "SELECT rowid, event_ids FROM due WHERE model = ? AND stage = ? AND at <= ?",
        (name, DUE_DELETE, now),
    ).fetchall()
    for rowid, listed in rows:
        for ids in _chunks(orjson.loads(listed)):
            db.execute(
                f"DELETE FROM decisions WHERE model = ? AND event_id IN ({_in(ids)}) "
                "AND keep_until <= ?",
                (name, *ids, now),
            )
        db.execute("DELETE FROM due WHERE rowid = ?", (rowid,))


def _expire(db: sqlite3.Connection, name: str, now: float, limit: int, log: bool) -> int:
    """Expire up to ``limit`` decisions pending past their deadline, oldest ``due`` row
    first; a row whose decisions are all settled moves on to its keep-until."""
    expired = 0
    while expired < limit:
        rows = db.execute(
            "SELECT rowid, keep_until, event_ids FROM due WHERE model = ? AND stage = ? "
            "AND at < ? ORDER BY at, rowid LIMIT 64",
            (name, DUE_EXPIRE, now),
        ).fetchall()
        if not rows:
            break
        for rowid, keep_until, listed in rows:
            pending = _pending(db, name, orjson.loads(listed), now)
            settled = pending[: limit - expired]
            _settle(db, name, [event_id for event_id, _ in settled], "expired")
            if log:
                for event_id, payload in settled:
                    append_entry(db, name, event_id, payload, None, now)
            if len(pending) > limit - expired:  # the rest at the next sweep
                return limit
            expired += len(pending)
            db.execute(
                "UPDATE due SET stage = ?, at = ? WHERE rowid = ?", (DUE_DELETE, keep_until, rowid)
            )
            if expired >= limit:
                break
    return expired


def _settle(db: sqlite3.Connection, name: str, event_ids: list[str], state: str) -> None:
    """Turn the decisions ``event_ids`` of ``name`` into tombstones in ``state`` (``used``
    or ``expired``): their rows deleted and written again without the payload.

    Not an ``UPDATE``: SQLite merges the pages of a B-tree that a delete leaves less
    than a third full, but never those an update shrinks, so a table of tombstones
    made by updates keeps the pages its payloads filled (a 30,000-decision wave left
    12 MB of tombstones, 20 to a page) and new decisions cannot reuse them.
    """
    for chunk in _chunks(event_ids):
        rows = db.execute(
            f"DELETE FROM decisions WHERE model = ? AND event_id IN ({_in(chunk)}) "
            "RETURNING event_id, deadline, keep_until",
            (name, *chunk),
        ).fetchall()
        db.executemany(
            "INSERT INTO decisions(model, event_id, deadline, keep_until, payload, state) "
            "VALUES (?, ?, ?, ?, NULL, ?)",
            [(name, event_id, deadline, keep, state) for event_id, deadline, keep in rows],
        )


def _pending(db: sqlite3.Connection, name: str, ids: list[str], now: float) -> list[Any]:
    """``(event_id, payload)`` of the decisions of ``ids`` pending past their deadline,
    by deadline."""
    found: list[Any] = []
    for chunk in _chunks(ids):
        found += db.execute(
            f"SELECT deadline, event_id, payload FROM decisions WHERE model = ? "
            f"AND event_id IN ({_in(chunk)}) AND state = 'pending' AND deadline < ?",
            (name, *chunk, now),
        ).fetchall()
    found.sort(key=lambda row: (row[0], row[1]))
    return [(event_id, payload) for _, event_id, payload in found]
