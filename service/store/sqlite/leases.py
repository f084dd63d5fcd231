"""The learner lease in the embedded store: the ``lease`` table, tokens in ``counters``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from service.store.base import IdleLearner, IdleVerdict, Lease
from service.store.protocols import LeaseStore
from service.store.sqlite.connection import SqliteBase


class SqliteLeases(SqliteBase, LeaseStore):
    """Take, renew, scan and give back learner leases."""

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

    async def announce_learner(
        self, holder: str, *, ttl_seconds: float, now: float
    ) -> tuple[int, int]:
        """One process uses the embedded store: it learns every model it holds."""
        return 1, 0

    async def withdraw_learner(self, holder: str) -> None:
        return None
