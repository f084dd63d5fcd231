"""The embedded store's connection: the data directory's lock, the database, transactions.

``data_dir/banditree.sqlite3`` holds model records, pending decisions, the feedback log,
the learner lease and checkpoints.  Every write is one transaction, so a feedback is
claimed and logged together or not at all.  ``synchronous`` is ``NORMAL`` by default:
a committed transaction survives the process being killed (the WAL is written before
the answer); with ``FULL`` it also survives a power cut, at one fsync per commit.

One process owns the database at a time (an exclusive lock on ``banditree.lock``).
Small statements run on the caller's thread; checkpoint bytes move in a worker thread,
and loads read them on a reading connection, so the loop's commits never wait for one.
The WAL is checkpointed by a thread of its own (:mod:`service.store.sqlite.wal`).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from service.store.base import ModelGone, StoreFull, StoreUnavailable
from service.store.protocols import StoreLifecycle
from service.store.sqlite.schema import SCHEMA, import_file_store, index_due
from service.store.sqlite.wal import WalCheckpointer

T = TypeVar("T")
DATABASE_NAME = "banditree.sqlite3"
#: free bytes past those of a failed write's moment that tell space returned
ROOM_BACK_BYTES = 1 << 20
#: seconds after a write failed for want of space before a probe write may tell room
FULL_HOLD_SECONDS = 2.0
#: page size of a new database.  The decisions and log tables are WITHOUT ROWID, whose
#: rows keep at most about a quarter page in the page itself: with 4 KiB pages a row
#: over about 1,000 bytes (a ranking decision of 10 candidates) takes a 4 KiB overflow
#: page of its own, four times the bytes to write, checkpoint and keep.  With 8 KiB
#: pages rows up to about 2,000 bytes stay in their page.
PAGE_SIZE = 8192


class DataDirectoryLocked(RuntimeError):
    """Another process serves this data directory."""


class SqliteBase(StoreLifecycle):
    """The database of one data directory, shared by every concern of the embedded store."""

    def __init__(
        self,
        data_dir: Path,
        *,
        synchronous: Literal["normal", "full"] = "normal",
        checkpoint_keep_bytes: int | None = None,
        min_free_bytes: int = 0,
    ) -> None:
        self.data_dir = Path(data_dir)
        #: bytes the checkpoints of one model may take together (None: no bound)
        self.keep_bytes = checkpoint_keep_bytes
        #: free bytes the file system keeps for decisions and feedback (see :meth:`_room`)
        self.min_free_bytes = min_free_bytes
        #: the last write that failed for want of space: why, the bytes then free, when
        #: (``time.monotonic``); None once space returned
        self._full: tuple[str, int, float] | None = None
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
        self._creates: dict[str, set[str]] = {}  # creates under way, by name (one process)
        # decisions queued in this event-loop tick: (rows, counted, woken when committed)
        self._puts: list[tuple[list[tuple[Any, ...]], bool, asyncio.Future[None]]] = []
        self._large_write = False  # the transaction under way holds a checkpoint save
        try:
            # a new database only (an existing one keeps its page size): see PAGE_SIZE
            self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute("PRAGMA wal_autocheckpoint=0")  # WalCheckpointer's thread does it
            self._db.executescript(SCHEMA)
            imported = self._tx(lambda db: import_file_store(db, self.data_dir))
            self._tx(index_due)
        except BaseException:
            self._db.close()
            self._lock_file.close()
            raise
        self.imported_models: list[str] = imported
        self._checkpointer = WalCheckpointer(self.path, write_lock=self._mutex)
        self._read_db: sqlite3.Connection | None = None  # reads in worker threads
        self._read_mutex = threading.Lock()

    def _tx(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one immediate transaction; store errors become StoreUnavailable
        (:class:`StoreFull` when the disk is full)."""
        with self._mutex:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(db)
                    db.execute("COMMIT")
                    if self._large_write:  # its WAL frames copied and given back soon
                        self._large_write = False
                        self._checkpointer.nudge()
                except BaseException:
                    # a failed COMMIT (SQLITE_FULL) may leave the transaction open, or
                    # SQLite may have rolled it back itself
                    self._large_write = False
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                return result
            except sqlite3.Error as err:
                if _out_of_space(err):
                    self._full = (str(err), _free_bytes(self.data_dir), time.monotonic())
                    raise StoreFull(f"sqlite: {err}") from err
                raise StoreUnavailable(f"sqlite: {err}") from err

    def _room(self, db: sqlite3.Connection, size: int) -> None:
        """The free-space guard of a large write (a checkpoint): :class:`StoreFull` when
        writing ``size`` bytes would leave the data directory's file system with less
        than ``min_free_bytes`` free.  The bytes go to the WAL first and then, when the
        WAL is checkpointed, into the database file, where its free pages take them
        before the file grows; the WAL gives its bytes back once it starts over (the
        WAL's thread is woken after the commit for that).

        Checkpoints are only a shortcut (the log holds every acknowledged feedback), so
        they never take the last of the space that decisions and feedback need.
        """
        self._large_write = True
        if self.min_free_bytes <= 0:
            return
        free_pages = int(db.execute("PRAGMA freelist_count").fetchone()[0])
        page = int(db.execute("PRAGMA page_size").fetchone()[0])
        left = _free_bytes(self.data_dir) - size - max(0, size - free_pages * page)
        if left < self.min_free_bytes:
            raise StoreFull(
                f"a {size}-byte checkpoint would leave {left} bytes free on the data "
                f"directory's file system, under its guard of {self.min_free_bytes} "
                "(BANDITREE_MIN_FREE_BYTES)"
            )

    def _query(self, sql: str, args: tuple[Any, ...]) -> Any:
        """The first row of one read-only statement, in a transaction of its own (SQLite
        reads each statement from one snapshot).  The same answer as in a :meth:`_tx`
        without its ``BEGIN`` and ``COMMIT``: each statement lets go of the interpreter
        lock and takes it back, and a learner's thread that holds it meanwhile hands it
        back only after its switch interval."""
        with self._mutex:
            try:
                return self._db.execute(sql, args).fetchone()
            except sqlite3.Error as err:
                raise StoreUnavailable(f"sqlite: {err}") from err

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """The rows of a query on the reading connection (committed data; in a worker thread).

        The writing connection's mutex is not taken, so the event loop never waits on it:
        a worker thread that reads there holds no lock the loop's transactions need.
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

    @staticmethod
    def _mark(db: sqlite3.Connection, name: str) -> str:
        """The mark under which the store holds ``name``; :class:`ModelGone` when it does not."""
        row = db.execute("SELECT mark FROM held WHERE model = ?", (name,)).fetchone()
        if row is None:
            raise ModelGone(f"the store does not hold model {name!r}")
        return str(row[0])

    async def ping(self) -> None:
        """:class:`StoreUnavailable` when the database cannot be read or its directory is
        not writable; :class:`StoreFull` when it cannot write.

        It cannot write while its file system has less than ``min_free_bytes`` free, and
        after a write failed for want of space: until :data:`ROOM_BACK_BYTES` more are
        free than then, or, :data:`FULL_HOLD_SECONDS` after the failure, until a probe
        write goes through (a file-size limit or a quota frees nothing the file system
        shows).  A small write may still find room in a full database, so neither the
        probe nor traffic clears the failure before that.
        """
        self._tx(lambda db: db.execute("SELECT 1").fetchone())
        if not os.access(self.data_dir, os.W_OK):
            raise StoreUnavailable(f"data directory {self.data_dir} is not writable")
        free = _free_bytes(self.data_dir)
        if free < self.min_free_bytes:
            raise StoreFull(
                f"{free} bytes free on the data directory's file system, under its guard "
                f"of {self.min_free_bytes} (BANDITREE_MIN_FREE_BYTES)"
            )
        full = self._full
        if full is None:
            return
        reason, free_then, failed_at = full
        if free >= free_then + ROOM_BACK_BYTES:
            self._full = None
        elif time.monotonic() - failed_at < FULL_HOLD_SECONDS:
            raise StoreFull(f"the last write found no room: sqlite: {reason}")
        else:
            self._tx(_probe)  # StoreFull again when it finds no room
            if self._full is full:
                self._full = None

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


#: SQLite's primary result codes of a write that found no room
_SQLITE_FULL, _SQLITE_IOERR = 13, 10


def _out_of_space(err: sqlite3.Error) -> bool:
    """Whether ``err`` is a write that found no room: SQLITE_FULL, or an I/O error (a
    write past a file-size limit, a quota)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is None:
        return "disk is full" in str(err)
    return code & 0xFF in (_SQLITE_FULL, _SQLITE_IOERR)


def _free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still take on ``path``'s file system."""
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _probe(db: sqlite3.Connection) -> None:
    db.execute(
        "INSERT INTO meta(key, value) VALUES ('write_probe', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (uuid.uuid4().hex,),
    )
