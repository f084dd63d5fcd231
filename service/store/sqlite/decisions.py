"""Pending decisions in the embedded store: the ``decisions`` table.

A row is ``pending`` until claimed; a claimed row stays as a tombstone (``used`` or
``expired``, without its payload) until ``keep_until``, so a repeat gets a precise answer.
The decision writes of one event-loop tick share one transaction (group commit).
"""

from __future__ import annotations

import asyncio
import sqlite3

from service.store.base import MIN_TOMBSTONE_SECONDS, EventLookup, StoreBehind, event_deadlines
from service.store.protocols import DecisionStore
from service.store.sqlite.connection import SqliteBase
from service.store.sqlite.log import append_entry


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
        for rows, counted, _ in batch:
            if rows and counted:
                counts[rows[0][0]] = counts.get(rows[0][0], 0) + len(rows)

        def work(db: sqlite3.Connection) -> None:
            db.executemany(
                "INSERT OR REPLACE INTO decisions(model, event_id, deadline, keep_until, "
                "payload, state) VALUES (?, ?, ?, ?, ?, 'pending')",
                [row for rows, _, _ in batch for row in rows],
            )
            db.executemany(
                "INSERT INTO counters(model, decisions) VALUES (?, ?) "
                "ON CONFLICT(model) DO UPDATE SET decisions = decisions + excluded.decisions",
                counts.items(),
            )

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

    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        return self._tx(lambda db: _lookup(db, name, event_id, now))

    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float, seen: int = 0
    ) -> EventLookup:
        def work(db: sqlite3.Connection) -> EventLookup:
            found = _lookup(db, name, event_id, now)
            if found.status != "pending" or found.payload is None:
                return EventLookup(found.status)
            self._mark(db, name)
            _check_seen(db, name, seen)
            db.execute(
                "UPDATE decisions SET state = 'used', payload = NULL "
                "WHERE model = ? AND event_id = ?",
                (name, event_id),
            )
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
            # keep_until >= deadline + MIN_TOMBSTONE_SECONDS, so the deadline bound lets the
            # decisions_due index skip the rows still young, instead of a whole-table scan
            db.execute(
                "DELETE FROM decisions INDEXED BY decisions_due WHERE model = ? "
                "AND state IN ('pending', 'used', 'expired') "
                "AND deadline <= ? AND keep_until <= ?",
                (name, now - MIN_TOMBSTONE_SECONDS, now),
            )
            rows = db.execute(
                "SELECT event_id, payload FROM decisions WHERE model = ? AND state = 'pending' "
                "AND deadline < ? ORDER BY deadline, event_id LIMIT ?",
                (name, now, limit),
            ).fetchall()
            for event_id, payload in rows:
                db.execute(
                    "UPDATE decisions SET state = 'expired', payload = NULL "
                    "WHERE model = ? AND event_id = ?",
                    (name, event_id),
                )
                if log:
                    append_entry(db, name, event_id, payload, None, now)
            return len(rows)

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
