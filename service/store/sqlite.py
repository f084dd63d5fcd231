"""Embedded store: one SQLite database in WAL mode under the data directory (one process).

``data_dir/banditree.sqlite3`` holds model records, pending decisions, the feedback log,
the learner lease and checkpoints.  Every write is one transaction, so a feedback is
claimed and logged together or not at all.  ``synchronous`` is ``NORMAL`` by default:
a committed transaction survives the process being killed (the WAL is written before
the answer); with ``FULL`` it also survives a power cut, at one fsync per commit.

One process owns the database at a time (an exclusive lock on ``banditree.lock``).
Small statements run on the caller's thread; checkpoint bytes move in a worker thread.
The decision writes of one event-loop tick share one transaction, and the WAL is
checkpointed by a thread of its own (:mod:`service.store.sqlite_wal`).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from service.store.base import (
    MIN_TOMBSTONE_SECONDS,
    CheckpointInfo,
    EventLookup,
    FencedOut,
    HeldCounters,
    IdleLearner,
    IdleVerdict,
    Lease,
    LogBounds,
    LogEntry,
    ModelGone,
    OfferedSnapshot,
    Store,
    StoreUnavailable,
    event_deadlines,
)
from service.store.sqlite_schema import SCHEMA, import_file_store
from service.store.sqlite_wal import WalCheckpointer

T = TypeVar("T")
DATABASE_NAME = "banditree.sqlite3"


class DataDirectoryLocked(RuntimeError):
    """Another process serves this data directory."""


class SqliteStore(Store):
    """The default store: works on a bare machine, one process per data directory."""

    def __init__(
        self, data_dir: Path, *, synchronous: Literal["normal", "full"] = "normal"
    ) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.data_dir / "banditree.lock", "a")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise DataDirectoryLocked(
                f"another banditree process serves {self.data_dir}; the embedded store is "
                "one process (set BANDITREE_REDIS_URL to run several)"
            ) from None
        self.path = self.data_dir / DATABASE_NAME
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._mutex = threading.Lock()
        self._notices: asyncio.Queue[str] | None = None
        self._lease_marks: dict[str, tuple[int, str]] = {}  # as in the Redis store
        # decisions queued in this event-loop tick: (rows, woken when committed)
        self._puts: list[tuple[list[tuple[Any, ...]], asyncio.Future[None]]] = []
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute("PRAGMA wal_autocheckpoint=0")  # WalCheckpointer's thread does it
            self._db.executescript(SCHEMA)
            imported = self._tx(lambda db: import_file_store(db, self.data_dir))
        except BaseException:
            self._db.close()
            self._lock_file.close()
            raise
        self.imported_models: list[str] = imported
        self._checkpointer = WalCheckpointer(self.path)
        self._read_db: sqlite3.Connection | None = None  # gauge counts, in worker threads
        self._read_mutex = threading.Lock()

    # -- plumbing --------------------------------------------------------------------
    def _tx(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one immediate transaction; store errors become StoreUnavailable."""
        with self._mutex:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(db)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
                return result
            except sqlite3.Error as err:
                raise StoreUnavailable(f"sqlite: {err}") from err

    async def ping(self) -> None:
        self._tx(lambda db: db.execute("SELECT 1").fetchone())
        if not os.access(self.data_dir, os.W_OK):
            raise StoreUnavailable(f"data directory {self.data_dir} is not writable")

    async def close(self) -> None:
        self._checkpointer.stop()
        with self._read_mutex:
            if self._read_db is not None:
                self._read_db.close()
        with self._mutex:
            self._db.close()
        self._lock_file.close()

    async def epoch(self) -> str:
        def work(db: sqlite3.Connection) -> str:
            db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('epoch', ?)", (uuid.uuid4().hex,)
            )
            return str(db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()[0])

        return self._tx(work)

    @staticmethod
    def _mark(db: sqlite3.Connection, name: str) -> str:
        """The mark under which the store holds ``name``; :class:`ModelGone` when it does not."""
        row = db.execute("SELECT mark FROM held WHERE model = ?", (name,)).fetchone()
        if row is None:
            raise ModelGone(f"the store does not hold model {name!r}")
        return str(row[0])

    # -- model records -------------------------------------------------------------
    def _hold(
        self, name: str, known: HeldCounters, offer: OfferedSnapshot | None, now: float
    ) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            held = db.execute("SELECT base, offered FROM held WHERE model = ?", (name,)).fetchone()
            newly = held is None
            if held is None:
                db.execute("INSERT OR IGNORE INTO counters(model) VALUES (?)", (name,))
                db.execute(
                    "UPDATE counters SET log_last = MAX(log_last, ?), sequence = MAX(sequence, ?),"
                    " token = MAX(token, ?) + 1, decisions = MAX(decisions, ?) WHERE model = ?",
                    (known.log_last, known.sequence, known.token, known.decisions, name),
                )
                db.execute("DELETE FROM lease WHERE model = ?", (name,))
                base = db.execute(
                    "SELECT log_last FROM counters WHERE model = ?", (name,)
                ).fetchone()[0]
                db.execute(
                    "INSERT INTO held(model, mark, base) VALUES (?, ?, ?)",
                    (name, uuid.uuid4().hex, base),
                )
                held = (base, 0)
            base, offered = held
            oldest = db.execute(
                "SELECT MIN(offset) FROM checkpoints WHERE model = ?", (name,)
            ).fetchone()[0]
            if offer is not None and offer.sequence > offered and (oldest or 0) <= base:
                db.execute("UPDATE held SET offered = ? WHERE model = ?", (offer.sequence, name))
                args = dict(
                    version=offer.version, blob=offer.blob, keep=offer.keep, now=now,
                    offset=base, acked_at=0.0, token=-1,
                )  # fmt: skip
                self._save_rows(db, name, args)
            return newly

        return self._tx(work)

    async def hold_model(
        self,
        name: str,
        *,
        known: HeldCounters | None = None,
        offer: OfferedSnapshot | None = None,
        now: float = 0.0,
    ) -> bool:
        return await asyncio.to_thread(self._hold, name, known or HeldCounters(), offer, now)

    async def save_model(self, name: str, record: str, *, replace: bool = True) -> None:
        conflict = "DO UPDATE SET record = excluded.record" if replace else "DO NOTHING"
        self._tx(
            lambda db: db.execute(
                f"INSERT INTO models(name, record) VALUES (?, ?) ON CONFLICT(name) {conflict}",
                (name, record),
            )
        )

    async def load_model(self, name: str) -> str | None:
        row = self._tx(
            lambda db: db.execute("SELECT record FROM models WHERE name = ?", (name,)).fetchone()
        )
        return None if row is None else str(row[0])

    async def load_models(self) -> dict[str, str]:
        # O(models), polled by discovery: read on the reading connection in a worker thread
        rows = await asyncio.to_thread(self._read, "SELECT name, record FROM models", ())
        return {str(name): str(record) for name, record in sorted(rows)}

    async def delete_model(self, name: str) -> None:
        def work(db: sqlite3.Connection) -> None:
            for table in (
                "decisions", "log", "lease", "checkpoints", "requests", "counters", "held",
            ):  # fmt: skip
                db.execute(f"DELETE FROM {table} WHERE model = ?", (name,))
            db.execute("DELETE FROM models WHERE name = ?", (name,))

        self._tx(work)

    # -- pending decisions -----------------------------------------------------------
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        """Store the decisions in the commit of this event-loop tick (group commit).

        Every ``put_events`` of one loop tick goes in one transaction, committed before
        any of them returns: each decision is stored before its answer, at the cost of
        one commit per tick instead of one per request.
        """
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        rows = [(name, event_id, deadline, keep_until, payload) for event_id, payload in events]
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._puts.append((rows, done))
        if len(self._puts) == 1:
            loop.call_soon(self._commit_puts)
        await done

    def _commit_puts(self) -> None:
        """Commit the decisions queued in this tick in one transaction; wake their callers."""
        batch, self._puts = self._puts, []
        counts: dict[str, int] = {}
        for rows, _ in batch:
            if rows:
                counts[rows[0][0]] = counts.get(rows[0][0], 0) + len(rows)

        def work(db: sqlite3.Connection) -> None:
            db.executemany(
                "INSERT OR REPLACE INTO decisions(model, event_id, deadline, keep_until, "
                "payload, state) VALUES (?, ?, ?, ?, ?, 'pending')",
                [row for rows, _ in batch for row in rows],
            )
            db.executemany(
                "INSERT INTO counters(model, decisions) VALUES (?, ?) "
                "ON CONFLICT(model) DO UPDATE SET decisions = decisions + excluded.decisions",
                counts.items(),
            )

        try:
            self._tx(work)
        except Exception as err:
            for _, done in batch:
                if not done.done():
                    done.set_exception(err)
            return
        for _, done in batch:
            if not done.done():
                done.set_result(None)

    @staticmethod
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

    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        return self._tx(lambda db: self._lookup(db, name, event_id, now))

    @staticmethod
    def _append(
        db: sqlite3.Connection, name: str, event_id: str, payload: str, fb: str | None, now: float
    ) -> int:
        db.execute(
            "INSERT INTO counters(model, log_last) VALUES (?, 1) "
            "ON CONFLICT(model) DO UPDATE SET log_last = log_last + 1",
            (name,),
        )
        offset = int(
            db.execute("SELECT log_last FROM counters WHERE model = ?", (name,)).fetchone()[0]
        )
        db.execute(
            "INSERT INTO log(model, offset, event_id, decision, feedback, acked_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (name, offset, event_id, payload, fb, now),
        )
        return offset

    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float
    ) -> EventLookup:
        def work(db: sqlite3.Connection) -> EventLookup:
            found = self._lookup(db, name, event_id, now)
            if found.status != "pending" or found.payload is None:
                return EventLookup(found.status)
            self._mark(db, name)
            db.execute(
                "UPDATE decisions SET state = 'used', payload = NULL "
                "WHERE model = ? AND event_id = ?",
                (name, event_id),
            )
            offset = self._append(db, name, event_id, found.payload, feedback, now)
            return EventLookup("claimed", found.payload, offset)

        return self._tx(work)

    async def expire_events(self, name: str, *, now: float, limit: int, log: bool) -> int:
        def work(db: sqlite3.Connection) -> int:
            self._mark(db, name)
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
                    self._append(db, name, event_id, payload, None, now)
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

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """The rows of a query on the reading connection (committed data; in a worker thread).

        The writing connection's mutex is not taken, so the event loop never waits on it.
        """
        with self._read_mutex:
            try:
                if self._read_db is None:
                    self._read_db = sqlite3.connect(
                        self.path, isolation_level=None, check_same_thread=False
                    )
                return self._read_db.execute(sql, args).fetchall()
            except sqlite3.Error as err:
                raise StoreUnavailable(f"sqlite: {err}") from err

    # -- the log ---------------------------------------------------------------------
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

    # -- lease -----------------------------------------------------------------------
    async def acquire_lease(
        self, name: str, holder: str, *, ttl_seconds: float, now: float
    ) -> int | None:
        def work(db: sqlite3.Connection) -> int | None:
            mark = self._mark(db, name)
            row = db.execute(
                "SELECT holder, expires_at FROM lease WHERE model = ?", (name,)
            ).fetchone()
            if row is not None and row[1] > now and row[0] != holder:
                return None
            db.execute(
                "INSERT INTO counters(model, token) VALUES (?, 1) "
                "ON CONFLICT(model) DO UPDATE SET token = token + 1",
                (name,),
            )
            token = int(
                db.execute("SELECT token FROM counters WHERE model = ?", (name,)).fetchone()[0]
            )
            db.execute(
                "INSERT OR REPLACE INTO lease(model, holder, token, expires_at) VALUES (?,?,?,?)",
                (name, holder, token, now + ttl_seconds),
            )
            self._lease_marks[name] = (token, mark)
            return token

        return self._tx(work)

    async def renew_lease(
        self, name: str, holder: str, token: int, *, ttl_seconds: float, now: float
    ) -> bool:
        cursor = self._tx(
            lambda db: db.execute(
                "UPDATE lease SET expires_at = ? WHERE model = ? AND holder = ? AND token = ?",
                (now + ttl_seconds, name, holder, token),
            )
        )
        return cursor.rowcount == 1

    async def scan_idle(
        self, holder: str, idle: Sequence[IdleLearner], *, ttl_seconds: float, now: float
    ) -> dict[str, IdleVerdict]:
        def work(db: sqlite3.Connection) -> dict[str, IdleVerdict]:
            names = json.dumps([learner.name for learner in idle])
            among = "model IN (SELECT value FROM json_each(?))"
            held = dict(
                db.execute(
                    f"SELECT model, token FROM lease WHERE holder = ? AND {among}", (holder, names)
                )
            )
            kept = [learner for learner in idle if held.get(learner.name) == learner.token]
            db.executemany(
                "UPDATE lease SET expires_at = ? WHERE model = ?",
                [(now + ttl_seconds, learner.name) for learner in kept],
            )
            lasts = dict(
                db.execute(f"SELECT model, log_last FROM counters WHERE {among}", (names,))
            )
            asked = {
                row[0] for row in db.execute(f"SELECT model FROM requests WHERE {among}", (names,))
            }
            verdicts: dict[str, IdleVerdict] = {learner.name: "lost" for learner in idle}
            for learner in kept:
                busy = lasts.get(learner.name, 0) > learner.offset or learner.name in asked
                verdicts[learner.name] = "work" if busy else "idle"
            return verdicts

        return self._tx(work)

    async def release_lease(self, name: str, holder: str, token: int) -> None:
        self._tx(
            lambda db: db.execute(
                "DELETE FROM lease WHERE model = ? AND holder = ? AND token = ?",
                (name, holder, token),
            )
        )

    async def lease(self, name: str, *, now: float) -> Lease | None:
        row = self._tx(
            lambda db: db.execute(
                "SELECT holder, token, expires_at FROM lease WHERE model = ? AND expires_at > ?",
                (name, now),
            ).fetchone()
        )
        return None if row is None else Lease(str(row[0]), int(row[1]), float(row[2]))

    # -- checkpoints -----------------------------------------------------------------
    @staticmethod
    def _save_rows(db: sqlite3.Connection, name: str, args: dict[str, Any]) -> CheckpointInfo:
        db.execute("INSERT OR IGNORE INTO counters(model) VALUES (?)", (name,))
        newest, sequence = db.execute(
            "SELECT token, sequence FROM counters WHERE model = ?", (name,)
        ).fetchone()
        token = args["token"]
        if token == -1:  # an operator write: revoke the lease, fence its holder out
            token = newest + 1
            db.execute("DELETE FROM lease WHERE model = ?", (name,))
        elif token < newest:
            raise FencedOut(f"fencing token {token} is older than {newest}")
        sequence += 1
        db.execute(
            "UPDATE counters SET sequence = ?, token = ? WHERE model = ?", (sequence, token, name)
        )
        blob: bytes = args["blob"]
        info = CheckpointInfo(
            sequence, args["version"], args["now"], len(blob), args["offset"],
            args["acked_at"], token,
        )  # fmt: skip
        db.execute(
            "INSERT INTO checkpoints(model, sequence, version, created_at, size_bytes, "
            "offset, acked_at, token, blob) VALUES (?,?,?,?,?,?,?,?,?)",
            (name, *info.__dict__.values(), blob),
        )
        db.execute(
            "DELETE FROM checkpoints WHERE model = ? AND sequence <= ?",
            (name, sequence - args["keep"]),
        )
        oldest = db.execute(
            "SELECT MIN(offset) FROM checkpoints WHERE model = ?", (name,)
        ).fetchone()[0]
        db.execute("DELETE FROM log WHERE model = ? AND offset <= ?", (name, oldest))
        return info

    def _save(self, name: str, args: dict[str, Any]) -> CheckpointInfo:
        issued = self._lease_marks.get(name)

        def work(db: sqlite3.Connection) -> CheckpointInfo:
            mark = self._mark(db, name)
            if args["token"] != -1 and issued and issued[0] == args["token"] and issued[1] != mark:
                raise FencedOut(
                    f"fencing token {args['token']} was issued before the data was lost"
                )
            return self._save_rows(db, name, args)

        return self._tx(work)

    async def save_checkpoint(
        self,
        name: str,
        *,
        version: int,
        blob: bytes,
        keep: int,
        now: float,
        offset: int,
        acked_at: float,
        token: int,
    ) -> CheckpointInfo:
        args = dict(
            version=version, blob=blob, keep=keep, now=now, offset=offset, acked_at=acked_at,
            token=token,
        )  # fmt: skip
        info = await asyncio.to_thread(self._save, name, args)
        if self._notices is not None:
            self._notices.put_nowait(name)
        return info

    async def list_checkpoints(self, name: str, limit: int = 0) -> list[CheckpointInfo]:
        rows = self._tx(
            lambda db: db.execute(
                "SELECT sequence, version, created_at, size_bytes, offset, acked_at, token "
                "FROM checkpoints WHERE model = ? ORDER BY sequence DESC LIMIT ?",
                (name, limit if limit > 0 else -1),
            ).fetchall()
        )
        return [CheckpointInfo(*row) for row in rows]

    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        def read() -> bytes | None:
            row = self._tx(
                lambda db: db.execute(
                    "SELECT blob FROM checkpoints WHERE model = ? AND sequence = ?",
                    (name, sequence),
                ).fetchone()
            )
            return None if row is None else bytes(row[0])

        return await asyncio.to_thread(read)

    # -- notifications ---------------------------------------------------------------
    async def request_checkpoint(self, name: str) -> None:
        self._tx(lambda db: db.execute("INSERT OR IGNORE INTO requests(model) VALUES (?)", (name,)))

    async def take_checkpoint_request(self, name: str) -> bool:
        cursor = self._tx(lambda db: db.execute("DELETE FROM requests WHERE model = ?", (name,)))
        return cursor.rowcount > 0

    async def snapshot_notices(self, timeout_seconds: float) -> set[str]:
        if self._notices is None:
            self._notices = asyncio.Queue()
        names: set[str] = set()
        try:
            names.add(await asyncio.wait_for(self._notices.get(), timeout_seconds))
        except TimeoutError:
            return names
        while not self._notices.empty():
            names.add(self._notices.get_nowait())
        return names
