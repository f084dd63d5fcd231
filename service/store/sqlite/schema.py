"""The embedded store's tables, and the import of a data directory of the file-based store.

Before the SQLite store, the embedded store kept ``data_dir/models/<name>/model.json``
and ``checkpoints/<sequence>-v<version>.safetensors`` (pending decisions lived in memory
and were lost at every restart).  Opening such a directory imports every model record
and checkpoint once (offset 0: the old store had no log); the old files are left in
place and ignored afterwards.  A file that cannot be read stops the start with a
message naming it.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import uuid
from pathlib import Path

import orjson

log = logging.getLogger("banditree.service")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS models (name TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counters (
  model TEXT PRIMARY KEY, log_last INTEGER NOT NULL DEFAULT 0,
  token INTEGER NOT NULL DEFAULT 0, sequence INTEGER NOT NULL DEFAULT 0,
  decisions INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS decisions (
  model TEXT NOT NULL, event_id TEXT NOT NULL, deadline REAL NOT NULL,
  keep_until REAL NOT NULL, payload TEXT, state TEXT NOT NULL,
  PRIMARY KEY (model, event_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS due (
  model TEXT NOT NULL, stage INTEGER NOT NULL, at REAL NOT NULL, keep_until REAL NOT NULL,
  event_ids TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS due_at ON due (model, stage, at);
CREATE TABLE IF NOT EXISTS log (
  model TEXT NOT NULL, offset INTEGER NOT NULL, event_id TEXT NOT NULL,
  decision TEXT NOT NULL, feedback TEXT, acked_at REAL NOT NULL,
  PRIMARY KEY (model, offset)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lease (
  model TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
  expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
  model TEXT NOT NULL, sequence INTEGER NOT NULL, version INTEGER NOT NULL,
  created_at REAL NOT NULL, size_bytes INTEGER NOT NULL, offset INTEGER NOT NULL,
  acked_at REAL NOT NULL, token INTEGER NOT NULL, blob BLOB NOT NULL,
  PRIMARY KEY (model, sequence));
CREATE TABLE IF NOT EXISTS requests (model TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS held (
  model TEXT PRIMARY KEY, mark TEXT NOT NULL, base INTEGER NOT NULL,
  offered INTEGER NOT NULL DEFAULT 0);
"""

#: stage of a ``due`` row (:mod:`service.store.sqlite.decisions`): decisions to expire
#: at ``at``, or tombstones to delete at ``at``
DUE_EXPIRE, DUE_DELETE = 0, 1


def index_due(db: sqlite3.Connection) -> None:
    """List the decisions of a database of the layout before ``due`` in ``due`` rows, and
    drop that layout's index of every decision by state and deadline (once).

    The pending decisions are listed by the second of their deadline, the others by the
    second of their keep-until: each is then expired, or deleted, within a second of
    when the old layout's sweep would have.
    """
    old = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'decisions_due'"
    ).fetchone()
    if old is None:
        return
    groups: dict[tuple[str, int, int], tuple[float, float, list[str]]] = {}
    rows = db.execute("SELECT model, event_id, deadline, keep_until, state FROM decisions")
    for model, event_id, deadline, keep_until, state in rows:
        stage = DUE_EXPIRE if state == "pending" else DUE_DELETE
        at = deadline if stage == DUE_EXPIRE else keep_until
        key = (model, stage, int(at))
        latest, keep, ids = groups.get(key, (at, keep_until, []))
        ids.append(event_id)
        groups[key] = (max(latest, at), max(keep, keep_until), ids)
    db.executemany(
        "INSERT INTO due(model, stage, at, keep_until, event_ids) VALUES (?, ?, ?, ?, ?)",
        [(model, stage, at, keep, orjson.dumps(ids).decode())
         for (model, stage, _), (at, keep, ids) in groups.items()],
    )  # fmt: skip
    db.execute("DROP INDEX decisions_due")
    log.warning(
        "indexed %d decisions by when they are due (table due)",
        sum(len(ids) for _, _, ids in groups.values()),
    )


_CHECKPOINT_FILE = re.compile(r"^(\d{10})-v(\d+)\.safetensors$")
_IMPORTED = "file_store_imported"


class UnreadableDataDirectory(RuntimeError):
    """A file of the file-based store that cannot be imported."""


def import_file_store(db: sqlite3.Connection, data_dir: Path) -> list[str]:
    """Import ``data_dir/models`` (the file-based store) once; the names imported."""
    root = data_dir / "models"
    done = db.execute("SELECT value FROM meta WHERE key = ?", (_IMPORTED,)).fetchone()
    if done is not None or not root.is_dir():
        return []
    imported = []
    for record_path in sorted(root.glob("*/model.json")):
        name = record_path.parent.name
        try:
            record = record_path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise UnreadableDataDirectory(
                f"cannot import {record_path}: {err}; move the directory {root} away to start "
                "empty, or restore the file"
            ) from None
        db.execute("INSERT OR REPLACE INTO models(name, record) VALUES (?, ?)", (name, record))
        files = []
        for path in (record_path.parent / "checkpoints").glob("*.safetensors"):
            match = _CHECKPOINT_FILE.match(path.name)
            if match:
                files.append((int(match.group(1)), int(match.group(2)), path))
        for sequence, version, path in sorted(files):
            blob = path.read_bytes()
            db.execute(
                "INSERT INTO checkpoints(model, sequence, version, created_at, size_bytes, "
                "offset, acked_at, token, blob) VALUES (?, ?, ?, ?, ?, 0, 0, 0, ?)",
                (name, sequence, version, path.stat().st_mtime, len(blob), blob),
            )
        last = max((f[0] for f in files), default=0)
        db.execute(
            "INSERT OR REPLACE INTO counters(model, log_last, token, sequence) VALUES (?, 0, 0, ?)",
            (name, last),
        )
        db.execute(
            "INSERT OR IGNORE INTO held(model, mark, base) VALUES (?, ?, 0)",
            (name, uuid.uuid4().hex),
        )
        imported.append(name)
        log.warning(
            "imported model %s (%d checkpoints) from the file store at %s", name, len(files), root
        )
    db.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (_IMPORTED,))
    return imported
