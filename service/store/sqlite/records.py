"""Model records in the embedded store (``models``), and which models it holds (``held``)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid

from service.store.base import HeldCounters, NameTaken, OfferedSnapshot, TooManyModels
from service.store.protocols import RecordStore
from service.store.sqlite.checkpoints import save_rows
from service.store.sqlite.connection import SqliteBase

#: every table with a model's rows, emptied when the model is deleted (``models`` aside)
MODEL_TABLES = ("decisions", "due", "log", "lease", "checkpoints", "requests", "counters", "held")


class SqliteRecords(SqliteBase, RecordStore):
    """Hold, save, load and delete model records."""

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
                save_rows(db, name, args, keep_bytes=self.keep_bytes, room=self._room)
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

    async def new_epoch(self, *, changes: int = 0) -> str:
        epoch = uuid.uuid4().hex

        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM held")
            db.execute("UPDATE meta SET value = ? WHERE key = 'epoch'", (epoch,))
            if _changes(db) < changes:
                db.execute(
                    "INSERT INTO meta(key, value) VALUES ('changes', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (str(changes),),
                )

        self._tx(work)
        return epoch

    async def changes(self) -> int:
        return self._tx(_changes)

    async def save_model(
        self, name: str, record: str, *, replace: bool = True, max_models: int | None = None
    ) -> int:
        conflict = "DO UPDATE SET record = excluded.record" if replace else "DO NOTHING"

        def work(db: sqlite3.Connection) -> int:
            if max_models is not None:  # checked, counted and written in this transaction
                if db.execute("SELECT 1 FROM models WHERE name = ?", (name,)).fetchone():
                    raise NameTaken(name)
                held = int(db.execute("SELECT COUNT(*) FROM models").fetchone()[0])
                if held >= max_models:
                    raise TooManyModels(held, max_models)
            db.execute(
                f"INSERT INTO models(name, record) VALUES (?, ?) ON CONFLICT(name) {conflict}",
                (name, record),
            )
            return _count_change(db)

        return self._tx(work)

    async def begin_create(self, name: str, token: str, *, now: float) -> None:
        # one process owns the database: the creates under way are all in this dict
        self._creates.setdefault(name, set()).add(token)

    async def end_create(self, name: str, token: str, *, recorded: bool, now: float) -> bool:
        claims = self._creates.get(name, set())
        claims.discard(token)
        if not claims:
            self._creates.pop(name, None)
        if recorded or claims:
            return False

        def work(db: sqlite3.Connection) -> bool:
            if db.execute("SELECT 1 FROM models WHERE name = ?", (name,)).fetchone():
                return False  # a record owns the keys (written since this create's refusal)
            _delete_rows(db, name)
            return True

        return self._tx(work)

    async def load_model(self, name: str) -> str | None:
        row = self._tx(
            lambda db: db.execute("SELECT record FROM models WHERE name = ?", (name,)).fetchone()
        )
        return None if row is None else str(row[0])

    async def load_models(self) -> dict[str, str]:
        # O(models), polled by discovery: read, and made a dict, in a worker thread (the
        # event loop is not held while 10,000 records are sorted)
        def read() -> dict[str, str]:
            rows = self._read("SELECT name, record FROM models ORDER BY name", ())
            return {str(name): str(record) for name, record in rows}

        return await asyncio.to_thread(read)

    async def delete_model(self, name: str) -> int:
        def work(db: sqlite3.Connection) -> int:
            _delete_rows(db, name)
            db.execute("DELETE FROM models WHERE name = ?", (name,))
            return _count_change(db)

        return self._tx(work)


def _delete_rows(db: sqlite3.Connection, name: str) -> None:
    """Delete every row of model ``name`` but its record."""
    for table in MODEL_TABLES:
        db.execute(f"DELETE FROM {table} WHERE model = ?", (name,))


def _changes(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = 'changes'").fetchone()
    return 0 if row is None else int(row[0])


def _count_change(db: sqlite3.Connection) -> int:
    """One more save or delete of a model record: the count after it."""
    db.execute(
        "INSERT INTO meta(key, value) VALUES ('changes', '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
    )
    return _changes(db)
