"""Checkpoints in the embedded store: the ``checkpoints`` table, fenced by the lease's token."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any

from service.store.base import CheckpointInfo, FencedOut
from service.store.protocols import CheckpointStore
from service.store.sqlite.connection import SqliteBase


def save_rows(
    db: sqlite3.Connection,
    name: str,
    args: dict[str, Any],
    *,
    keep_bytes: int | None = None,
    room: Callable[[sqlite3.Connection, int], None] | None = None,
) -> CheckpointInfo:
    """Write a checkpoint under the next sequence, keep the newest ``keep`` whose bytes
    (the new one's included) add up to at most ``keep_bytes``, trim the log.

    ``args`` holds ``save_checkpoint``'s keywords; the caller checked the model is held.
    The checkpoints that go are deleted before the new one is written, so that the new
    one reuses their pages and the checkpoints never take more than ``keep_bytes`` (the
    newest one always stays, whatever its size).  ``room(db, bytes)`` raises
    :class:`StoreFull` when ``bytes`` more cannot be written (the free-space guard),
    told what the deletions leave free in the database.
    """
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
    kept, total = 1, len(blob)  # the new one
    for old_sequence, size in db.execute(
        "SELECT sequence, size_bytes FROM checkpoints WHERE model = ? ORDER BY sequence DESC",
        (name,),
    ).fetchall():
        if kept >= args["keep"] or (keep_bytes is not None and total + size > keep_bytes):
            db.execute(
                "DELETE FROM checkpoints WHERE model = ? AND sequence <= ?", (name, old_sequence)
            )
            break
        kept, total = kept + 1, total + size
    if room is not None:
        room(db, len(blob))
    db.execute(
        "INSERT INTO checkpoints(model, sequence, version, created_at, size_bytes, "
        "offset, acked_at, token, blob) VALUES (?,?,?,?,?,?,?,?,?)",
        (name, *info.__dict__.values(), blob),
    )
    oldest = db.execute("SELECT MIN(offset) FROM checkpoints WHERE model = ?", (name,)).fetchone()[
        0
    ]
    db.execute("DELETE FROM log WHERE model = ? AND offset <= ?", (name, oldest))
    return info


class SqliteCheckpoints(SqliteBase, CheckpointStore):
    """Save, list and load checkpoints; a save notifies this process's snapshot watcher."""

    def _save(self, name: str, args: dict[str, Any]) -> CheckpointInfo:
        issued = self._lease_marks.get(name)

        def work(db: sqlite3.Connection) -> CheckpointInfo:
            mark = self._mark(db, name)
            if args["token"] != -1 and issued and issued[0] == args["token"] and issued[1] != mark:
                raise FencedOut(
                    f"fencing token {args['token']} was issued before the data was lost"
                )
            return save_rows(db, name, args, keep_bytes=self.keep_bytes, room=self._room)

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
        # on the reading connection: a checkpoint is never changed once committed, and a
        # load (learners and snapshot refreshes, in worker threads) held the writer's
        # mutex and SQLite's write lock while it read the blob, so the event loop's
        # commits waited behind it (docs/decisions/0005-sqlite-store.md)
        def read() -> bytes | None:
            rows = self._read(
                "SELECT blob FROM checkpoints WHERE model = ? AND sequence = ?", (name, sequence)
            )
            return bytes(rows[0][0]) if rows else None

        return await asyncio.to_thread(read)
