"""Checkpoint requests (the ``requests`` table) and this process's notices of new checkpoints.

One process serves a data directory, so a notice is a queue in memory, filled by
:meth:`~service.store.sqlite.checkpoints.SqliteCheckpoints.save_checkpoint`.
"""

from __future__ import annotations

import asyncio

from service.store.protocols import NotificationStore
from service.store.sqlite.connection import SqliteBase


class SqliteNotifications(SqliteBase, NotificationStore):
    """Ask a learner for a checkpoint; wait for notices of saved ones."""

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
