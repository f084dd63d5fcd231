"""Embedded store: one SQLite database in WAL mode under the data directory (one process).

One module per concern, composed into :class:`SqliteStore`: the connection and its lock
(:mod:`.connection`), model records (:mod:`.records`), pending decisions
(:mod:`.decisions`), the log (:mod:`.log`), leases (:mod:`.leases`), checkpoints
(:mod:`.checkpoints`) and notifications (:mod:`.notifications`); the tables are in
:mod:`.schema`, the WAL checkpoints in :mod:`.wal`.
"""

from __future__ import annotations

from service.store.protocols import Store
from service.store.sqlite.checkpoints import SqliteCheckpoints
from service.store.sqlite.connection import DATABASE_NAME, DataDirectoryLocked
from service.store.sqlite.decisions import SqliteDecisions
from service.store.sqlite.leases import SqliteLeases
from service.store.sqlite.log import SqliteLog
from service.store.sqlite.notifications import SqliteNotifications
from service.store.sqlite.records import SqliteRecords
from service.store.sqlite.schema import UnreadableDataDirectory


class SqliteStore(
    SqliteRecords,
    SqliteDecisions,
    SqliteLog,
    SqliteLeases,
    SqliteCheckpoints,
    SqliteNotifications,
    Store,
):
    """The default store: works on a bare machine, one process per data directory."""


__all__ = ["DATABASE_NAME", "DataDirectoryLocked", "SqliteStore", "UnreadableDataDirectory"]
