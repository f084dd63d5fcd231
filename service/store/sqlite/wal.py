"""WAL checkpoints of the embedded store, in a thread of their own.

SQLite's automatic checkpoint runs inside the commit that crosses its page threshold:
it copies the WAL into the database and syncs both files, several milliseconds on the
thread that answers requests, every few hundred commits.  The store turns it off on
its connection and this thread runs a passive checkpoint on a second connection
instead.  A passive checkpoint never blocks the writer (SQLite releases the GIL while
it copies and syncs), and the writer starts the WAL over once a checkpoint has caught
up.  Durability is unchanged: commits are written to the WAL before they return, as
before; the checkpoint only moves them into the database file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger("banditree.service")


class WalCheckpointer:
    """Checkpoint the database at ``path`` every ``interval_seconds`` until :meth:`stop`."""

    def __init__(self, path: Path, *, interval_seconds: float = 0.25) -> None:
        self.path = path
        self.interval_seconds = interval_seconds
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sqlite-wal", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            while not self._stopped.wait(self.interval_seconds):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as err:  # retried at the next interval
                    log.warning("sqlite WAL checkpoint: %s", err)
        finally:
            db.close()

    def stop(self) -> None:
        """Stop the thread (after a checkpoint under way completes)."""
        self._stopped.set()
        self._thread.join()
