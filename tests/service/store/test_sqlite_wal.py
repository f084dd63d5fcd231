"""The embedded store's WAL on a small disk: it gives its bytes back (issue 41, item 2).

A WAL keeps its largest size after it starts over; on a small disk, saves of large
checkpoints made it the store's largest file, and a WAL that had taken the disk could
not be copied into the database any more.  Here a 16 MB file system takes thirty 1 MB
saves, each deleting the one before: the WAL never holds more than a few of them.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from service.store.sqlite.wal import MIN_WAL_BYTES, WalCheckpointer
from tests.service.small_fs import free_bytes, small_fs

BLOB = 1 << 20


def test_the_wal_is_truncated_when_the_disk_is_small(tmp_path: Path) -> None:
    with small_fs(tmp_path / "fs", 16) as fs:
        path = fs / "store.sqlite3"
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA wal_autocheckpoint=0")
        db.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)")
        lock = threading.Lock()
        wal = path.with_name(path.name + "-wal")
        checkpointer = WalCheckpointer(path, interval_seconds=60.0, write_lock=lock)
        largest = 0
        try:
            for i in range(30):
                with lock:
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("DELETE FROM blobs")
                    db.execute("INSERT INTO blobs VALUES (?, ?)", (i, bytes(BLOB)))
                    db.execute("COMMIT")
                largest = max(largest, wal.stat().st_size)
                checkpointer.nudge()
                deadline = 50
                while wal.stat().st_size > 4 * BLOB and deadline:  # the thread at work
                    threading.Event().wait(0.02)
                    deadline -= 1
        finally:
            checkpointer.stop()
            db.close()
        # without the shrinking limit the WAL would hold all 30 MB: the disk fills
        assert largest <= 8 * BLOB + MIN_WAL_BYTES
        assert free_bytes(fs) > 8 * BLOB
