"""The data layout is the one written before the stores were split by concern (but one
change since: ``due`` in place of an index of every decision).

A frozen copy of the old tables (SQLite) and of the old keys (Redis) is written by
hand, as the store of ``f3d7e71`` wrote them, and the stores of today must read it,
claim its pending decisions and go on with its counters; and what they write is laid
out under the same table names, columns and keys.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from service.store import CheckpointInfo, RedisStore, SqliteStore, Store
from service.store.sqlite import DATABASE_NAME
from tests.service.conftest import REDIS_URL

pytestmark = pytest.mark.anyio

#: the tables of the embedded store as ``f3d7e71`` created them
OLD_SCHEMA = """
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
CREATE INDEX IF NOT EXISTS decisions_due ON decisions (model, state, deadline);
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

T0 = time.time()
DEADLINE, KEEP_UNTIL = T0 + 60.0, T0 + 360.0
RECORD = '{"config": {}, "policy": null}'
#: the checkpoint the old store wrote: sequence 1, version 3, offset 0, token 2
OLD_CHECKPOINT = CheckpointInfo(1, 3, T0, 2, 0, 0.0, 2)


def _tables(db: sqlite3.Connection) -> list[tuple[str, str, str | None]]:
    return list(db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"))


def _write_old_sqlite(data_dir: Path) -> None:
    """Model ``m`` as the old store left it: one entry logged, one decision pending."""
    with sqlite3.connect(data_dir / DATABASE_NAME) as db:
        db.executescript(OLD_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('epoch', 'old-epoch')")
        db.execute("INSERT INTO models VALUES ('m', ?)", (RECORD,))
        db.execute("INSERT INTO counters VALUES ('m', 1, 2, 1, 2)")
        db.execute("INSERT INTO held VALUES ('m', 'old-mark', 0, 0)")
        db.executemany(
            "INSERT INTO decisions VALUES ('m', ?, ?, ?, ?, ?)",
            [
                ("e0", DEADLINE, KEEP_UNTIL, None, "used"),
                ("e1", DEADLINE, KEEP_UNTIL, "p1", "pending"),
            ],
        )
        db.execute("INSERT INTO log VALUES ('m', 1, 'e0', 'p0', '{\"loss\": 0}', ?)", (T0,))
        db.execute("INSERT INTO lease VALUES ('m', 'h', 2, ?)", (T0 + 60.0,))
        db.execute("INSERT INTO checkpoints VALUES ('m', 1, 3, ?, 2, 0, 0.0, 2, ?)", (T0, b"v3"))
        db.execute("INSERT INTO requests VALUES ('m')")


def _write_old_redis(prefix: str) -> None:
    """Model ``m`` in the keys of the old Redis store, as the sqlite one above."""
    client: Any = redis.Redis.from_url(REDIS_URL)
    try:
        client.set(prefix + "epoch", "old-epoch")
        client.hset(prefix + "models", "m", RECORD)
        fields = {"mark": "old-mark", "base": 0, "offered": 0, "log_last": 1, "token": 2}
        client.hset(prefix + "ctr:{m}", mapping={**fields, "sequence": 1, "decisions": 2})
        ttl_ms = int((KEEP_UNTIL - T0) * 1000)
        client.set(prefix + "ev:{m}:e1", f"{DEADLINE!r}|{KEEP_UNTIL!r}|p1", px=ttl_ms)
        client.zadd(prefix + "due:{m}", {"e1": DEADLINE})
        client.set(prefix + "done:{m}:e0", "used", px=ttl_ms)
        entry = {"e": "e0", "d": "p0", "f": '{"loss": 0}', "t": repr(T0)}
        client.xadd(prefix + "log:{m}", entry, id="1-0")
        client.set(prefix + "lease:{m}", "h|2", px=60_000)
        client.hset(prefix + "ckpt:{m}", "1", b"v3")
        client.zadd(prefix + "ckpts:{m}", {f"1|3|{T0!r}|2|0|0.0|2": 1})
        client.set(prefix + "req:{m}", "1")
    finally:
        client.close()


async def _reads_the_old_model(store: Store) -> None:
    """What the old store wrote reads back, and the store goes on from its counters."""
    assert await store.epoch() == "old-epoch"
    assert await store.load_models() == {"m": RECORD}
    assert (await store.peek_event("m", "e0", now=T0)).status == "duplicate"
    peeked = await store.peek_event("m", "e1", now=T0)
    assert (peeked.status, peeked.payload) == ("pending", "p1")
    assert await store.pending_count("m") == 1
    claimed = await store.append_feedback("m", "e1", '{"loss": 1}', now=T0 + 1)
    assert (claimed.status, claimed.payload, claimed.offset) == ("claimed", "p1", 2)
    entries = await store.read_log("m", after=0, limit=10)
    assert [(e.offset, e.event_id, e.decision, e.feedback) for e in entries] == [
        (1, "e0", "p0", '{"loss": 0}'),
        (2, "e1", "p1", '{"loss": 1}'),
    ]
    assert entries[0].acked_at == pytest.approx(T0)
    bounds = await store.log_bounds("m")
    assert (bounds.first, bounds.last, bounds.length, bounds.decisions) == (1, 2, 2, 2)
    assert await store.list_checkpoints("m") == [OLD_CHECKPOINT]
    assert await store.load_checkpoint("m", 1) == b"v3"
    lease = await store.lease("m", now=T0)
    assert lease is not None and (lease.holder, lease.token) == ("h", 2)
    assert await store.take_checkpoint_request("m")
    assert await store.acquire_lease("m", "other", ttl_seconds=30, now=T0) is None
    token = await store.acquire_lease("m", "h", ttl_seconds=30, now=T0)
    assert token == 3
    saved = await store.save_checkpoint(
        "m", version=4, blob=b"v4", keep=2, now=T0, offset=2, acked_at=T0, token=token
    )
    assert (saved.sequence, saved.token) == (2, 3)
    assert [e.offset for e in await store.read_log("m", after=0, limit=10)] == [1, 2]


async def test_a_data_directory_of_the_old_layout_loads(tmp_path: Path) -> None:
    _write_old_sqlite(tmp_path)
    store = SqliteStore(tmp_path)
    try:
        assert store.imported_models == []
        await _reads_the_old_model(store)
    finally:
        await store.close()


#: the one change since: decisions are listed by when they are due per commit (``due``),
#: not indexed one by one (:mod:`service.store.sqlite.decisions`)
DUE_LAYOUT = [
    ("index", "due_at", "CREATE INDEX due_at ON due (model, stage, at)"),
    (
        "table",
        "due",
        "CREATE TABLE due (\n  model TEXT NOT NULL, stage INTEGER NOT NULL, at REAL NOT NULL, "
        "keep_until REAL NOT NULL,\n  event_ids TEXT NOT NULL)",
    ),
]


async def test_the_tables_are_those_of_the_old_layout_but_due(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "new")
    await store.close()
    with sqlite3.connect(tmp_path / "new" / DATABASE_NAME) as new:
        written = _tables(new)
    old = sqlite3.connect(":memory:")
    old.executescript(OLD_SCHEMA)
    before = [t for t in _tables(old) if t[1] != "decisions_due"]
    assert written == sorted(before + DUE_LAYOUT)
    old.close()


async def test_the_old_layouts_decisions_expire_and_are_deleted_when_due(tmp_path: Path) -> None:
    """Opening a database of the old layout lists its decisions in ``due`` (and drops the
    old index): the pending one expires after its deadline, both are deleted at their
    keep-until, as the old sweep did."""
    _write_old_sqlite(tmp_path)
    store = SqliteStore(tmp_path)
    try:
        await store.hold_model("m")
        assert await store.expire_events("m", now=DEADLINE - 1, limit=10, log=False) == 0
        assert (await store.peek_event("m", "e1", now=DEADLINE - 1)).status == "pending"
        assert await store.expire_events("m", now=DEADLINE + 1, limit=10, log=False) == 1
        assert (await store.peek_event("m", "e1", now=DEADLINE + 1)).status == "expired"
        await store.expire_events("m", now=KEEP_UNTIL - 1, limit=10, log=False)
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT COUNT(*) FROM decisions").fetchone() == (2,)
        await store.expire_events("m", now=KEEP_UNTIL + 1, limit=10, log=False)
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT COUNT(*) FROM decisions").fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM due").fetchone() == (0,)
            index = "SELECT name FROM sqlite_master WHERE name = 'decisions_due'"
            assert db.execute(index).fetchall() == []
    finally:
        await store.close()


async def test_a_redis_of_the_old_layout_loads(redis_prefix: str) -> None:
    _write_old_redis(redis_prefix)
    store = RedisStore.from_url(REDIS_URL, prefix=redis_prefix)
    try:
        await _reads_the_old_model(store)
    finally:
        await store.close()


async def test_the_redis_keys_are_those_of_the_old_layout(redis_prefix: str) -> None:
    store = RedisStore.from_url(REDIS_URL, prefix=redis_prefix)
    try:
        await store.epoch()
        await store.hold_model("m")
        await store.save_model("m", RECORD)
        await store.put_events("m", [("e1", "p1"), ("e2", "p2")], now=T0, ttl_seconds=60)
        await store.append_feedback("m", "e1", "{}", now=T0)
        token = await store.acquire_lease("m", "h", ttl_seconds=30, now=T0)
        assert token is not None
        await store.save_checkpoint(
            "m", version=1, blob=b"x", keep=2, now=T0, offset=0, acked_at=0.0, token=token
        )
        await store.request_checkpoint("m")
    finally:
        await store.close()
    client: Any = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        keys = {key.removeprefix(redis_prefix) for key in client.scan_iter(redis_prefix + "*")}
        counters = set(client.hkeys(redis_prefix + "ctr:{m}"))
        entry = client.xrange(redis_prefix + "log:{m}")[0]
        (member,) = client.zrange(redis_prefix + "ckpts:{m}", 0, -1)
        pending = client.get(redis_prefix + "ev:{m}:e2")
    finally:
        client.close()
    assert keys == {
        # "changes" (the count of record saves and deletes) is new: read as 0 where absent
        "epoch", "changes", "models", "ctr:{m}", "ev:{m}:e2", "done:{m}:e1", "due:{m}", "log:{m}",
        "lease:{m}", "ckpt:{m}", "ckpts:{m}", "req:{m}",
    }  # fmt: skip
    assert counters == {"mark", "base", "offered", "log_last", "token", "sequence", "decisions"}
    assert entry[0] == "1-0" and set(entry[1]) == {"e", "d", "f", "t"}
    assert member.split("|")[::6] == ["1", str(token)] and len(member.split("|")) == 7
    assert pending is not None and pending.endswith("|p2") and pending.count("|") == 2
