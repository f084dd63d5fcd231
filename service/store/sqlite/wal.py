"""WAL checkpoints of the embedded store, in a thread of their own.

SQLite's automatic checkpoint runs inside the commit that crosses its page threshold:
it copies the WAL into the database and syncs both files, several milliseconds on the
thread that answers requests, every few hundred commits.  The store turns it off on
its connection and this thread runs a passive checkpoint on a second connection
instead.  A passive checkpoint never blocks the writer (SQLite releases the GIL while
it copies and syncs).  Durability is unchanged: commits are written to the WAL before
they return, as before; the checkpoint only moves them into the database file.

The writer starts the WAL over only when a checkpoint has copied all of it; under
steady traffic a commit lands during every passive checkpoint, so the WAL would never
start over and would grow for as long as the traffic lasts (hundreds of MB a minute at
a few thousand decisions a second, and appending to a growing file costs the writer
more than writing over the start of one).  So once the WAL is larger than
``max_wal_bytes``, the thread catches up: a second passive checkpoint copies what was
committed during the first, both files are synced, and a third runs holding the
store's write lock, so that no commit is under way: it copies only the little
committed since, syncs (little is left to sync), and the next commit starts the WAL
over.  That holds the writer for one short checkpoint (a few milliseconds, mostly two
``fsync``) once per ``max_wal_bytes`` of WAL, instead of letting the file grow
without bound.  The syncs are the ones SQLite's own checkpoint makes, made earlier:
durability and the order of writes are unchanged.

On a small or nearly full disk the WAL is the store's largest file, and it keeps its
largest size after it starts over.  So ``max_wal_bytes`` shrinks to a quarter of the
room the WAL could use (the file system's free bytes and the WAL's own), never under
:data:`MIN_WAL_BYTES`; when it has shrunk, the locked checkpoint truncates the WAL,
giving its bytes back to the file system; and the store wakes the thread after each
large write (:meth:`WalCheckpointer.nudge`), so that a burst of checkpoint saves
cannot fill the disk between two intervals.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger("banditree.service")

#: seconds between two checkpoints
INTERVAL_SECONDS = 0.25
#: WAL size past which a checkpoint holds the writer briefly so that the WAL starts over
MAX_WAL_BYTES = 64 << 20
#: the least ``max_wal_bytes`` shrinks to on a small or nearly full disk
MIN_WAL_BYTES = 1 << 20
#: seconds a truncating checkpoint waits for readers to finish
TRUNCATE_WAIT_SECONDS = 1.0


def _sync(path: Path) -> None:
    """Sync the database file: a checkpoint that stops short of the WAL's end leaves the
    pages it copied unsynced, for the next complete one to sync (under the write lock)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WalCheckpointer:
    """Checkpoint the database at ``path`` every ``interval_seconds`` (default
    :data:`INTERVAL_SECONDS`) until :meth:`stop`; ``write_lock`` is the lock the store
    holds around each write transaction, taken once the WAL passes ``max_wal_bytes``
    (default :data:`MAX_WAL_BYTES`)."""

    def __init__(
        self,
        path: Path,
        *,
        interval_seconds: float | None = None,
        write_lock: threading.Lock | None = None,
        max_wal_bytes: int | None = None,
    ) -> None:
        self.path = path
        self.interval_seconds = INTERVAL_SECONDS if interval_seconds is None else interval_seconds
        self.write_lock = write_lock
        self.max_wal_bytes = MAX_WAL_BYTES if max_wal_bytes is None else max_wal_bytes
        self._stopped = threading.Event()
        self._woken = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-wal", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        """Checkpoint now rather than at the next interval (after a large write)."""
        self._woken.set()

    def _limit(self, wal: Path) -> tuple[int, bool]:
        """The WAL's size limit now, and whether the disk made it smaller than
        ``max_wal_bytes`` (the WAL is then truncated when it starts over)."""
        try:
            stat = os.statvfs(self.path.parent)
            room = stat.f_bavail * stat.f_frsize + wal.stat().st_size
        except OSError:
            return self.max_wal_bytes, False
        limit = max(MIN_WAL_BYTES, room // 4)
        if limit < self.max_wal_bytes:
            return limit, True
        return self.max_wal_bytes, False

    def _run(self) -> None:
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=TRUNCATE_WAIT_SECONDS
        )
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
            while True:
                self._woken.wait(self.interval_seconds)
                self._woken.clear()
                if self._stopped.is_set():
                    break
                try:
                    # frames: the WAL's length when the checkpoint began (commits made
                    # while it ran are after them, and keep the WAL from starting over)
                    ((_, frames, _),) = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    lock = self.write_lock
                    limit, tight = self._limit(wal)
                    if lock is not None and frames * page_size > limit:
                        # what was committed during the first, unlocked: the locked one
                        # then copies only the little committed during this one
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                        # both files synced now: the locked one's own syncs find little to do
                        _sync(self.path)
                        _sync(wal)
                        mode = "TRUNCATE" if tight else "PASSIVE"
                        with lock:  # no commit under way: the WAL is copied to its end
                            db.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
                except (sqlite3.Error, OSError) as err:  # retried at the next interval
                    log.warning("sqlite WAL checkpoint: %s", err)
        finally:
            db.close()

    def stop(self) -> None:
        """Stop the thread (after a checkpoint under way completes)."""
        self._stopped.set()
        self._woken.set()
        self._thread.join()
