"""The embedded store: one process per data directory, import of the file-based store."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from banditree.learners import build_learner
from banditree.persistence import dumps, loads
from service.store import SqliteStore
from service.store.sqlite import DataDirectoryLocked, UnreadableDataDirectory, wal

pytestmark = pytest.mark.anyio

CONFIG = {"kind": "dgt", "n_features": 3, "n_actions": 2, "accumulate": 1}


def _write_file_store(data_dir: Path) -> bytes:
    """A data directory as the file-based store wrote it: record + two checkpoints."""
    model_dir = data_dir / "models" / "old"
    (model_dir / "checkpoints").mkdir(parents=True)
    learner = build_learner(CONFIG)
    record = {"uid": "u1", "config": learner.config(), "policy": {}, "created_at": 1.0}
    (model_dir / "model.json").write_text(json.dumps(record))
    first = dumps(learner)
    (model_dir / "checkpoints" / "0000000001-v0.safetensors").write_bytes(first)
    (model_dir / "checkpoints" / "0000000002-v0.safetensors").write_bytes(first + b"")
    return first


async def test_a_file_store_directory_is_imported_once(tmp_path: Path) -> None:
    blob = _write_file_store(tmp_path)
    store = SqliteStore(tmp_path)
    assert store.imported_models == ["old"]
    assert json.loads(await store.load_model("old") or "{}")["uid"] == "u1"
    listed = await store.list_checkpoints("old")
    assert [(i.sequence, i.version, i.offset) for i in listed] == [(2, 0, 0), (1, 0, 0)]
    assert loads(await store.load_checkpoint("old", 2) or b"").config() == loads(blob).config()
    # the next checkpoint continues the sequence
    token = await store.acquire_lease("old", "h", ttl_seconds=5, now=1.0)
    assert token is not None
    info = await store.save_checkpoint(
        "old", version=1, blob=blob, keep=5, now=2.0, offset=0, acked_at=0.0, token=token
    )
    assert info.sequence == 3
    await store.delete_model("old")
    await store.close()
    again = SqliteStore(tmp_path)  # imported once: a deleted model stays deleted
    assert again.imported_models == [] and await again.load_models() == {}
    await again.close()


async def test_an_unreadable_record_stops_the_start_with_a_way_out(tmp_path: Path) -> None:
    _write_file_store(tmp_path)
    (tmp_path / "models" / "old" / "model.json").write_bytes(b"\xff\xfe")
    with pytest.raises(UnreadableDataDirectory, match="move the directory"):
        SqliteStore(tmp_path)


async def test_one_process_per_data_directory(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path)
    with pytest.raises(DataDirectoryLocked, match="BANDITREE_REDIS_URL"):
        SqliteStore(tmp_path)
    await first.close()
    second = SqliteStore(tmp_path)
    await second.ping()
    await second.close()


def _stored_ids(store: SqliteStore) -> list[str]:
    with sqlite3.connect(store.path) as db:
        return [row[0] for row in db.execute("SELECT event_id FROM decisions ORDER BY event_id")]


async def test_ids_are_deleted_once_their_tombstone_passes(tmp_path: Path) -> None:
    """The sweep deletes used, expired and unclaimed ids at their keep-until, not before."""
    store = SqliteStore(tmp_path)
    try:
        await store.hold_model("m")  # a model the store holds: the log takes its feedback
        t0, ttl = 1_000.0, 10.0
        await store.put_events(
            "m", [("a", "pa"), ("b", "pb"), ("c", "pc")], now=t0, ttl_seconds=ttl
        )
        await store.put_events("m", [("late", "pl")], now=t0 + 100, ttl_seconds=ttl)
        await store.put_events("other", [("o", "po")], now=t0, ttl_seconds=ttl)
        assert (await store.append_feedback("m", "a", "{}", now=t0 + 1)).status == "claimed"
        assert await store.expire_events("m", now=t0 + ttl + 1, limit=1, log=False) == 1  # b
        assert await store.expire_events("m", now=t0 + ttl + 2, limit=10, log=False) == 1  # c
        keep_until = t0 + ttl + 300.0
        await store.expire_events("m", now=keep_until - 1, limit=0, log=False)
        assert _stored_ids(store) == ["a", "b", "c", "late", "o"]
        await store.expire_events("m", now=keep_until, limit=0, log=False)
        assert _stored_ids(store) == ["late", "o"]  # another model's ids are its own sweep's
    finally:
        await store.close()


def _wal_restarts(wal_file: Path) -> int:
    """The WAL header's checkpoint sequence number: one more each time the WAL starts over."""
    with open(wal_file, "rb") as f:
        return int.from_bytes(f.read(16)[12:16], "big")


async def test_the_wal_starts_over_under_steady_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decisions stored back to back (commits during every checkpoint) leave a WAL that
    starts over each time it passes the checkpointer's bound, instead of one that grows
    for as long as the writes go on."""
    monkeypatch.setattr(wal, "INTERVAL_SECONDS", 0.01)
    monkeypatch.setattr(wal, "MAX_WAL_BYTES", 256 << 10)
    store = SqliteStore(tmp_path)
    wal_file = Path(f"{store.path}-wal")
    payload = "x" * 3000  # about a page per decision
    try:
        await store.put_events("m", [("first", payload)], now=1_000.0, ttl_seconds=60)
        restarts = _wal_restarts(wal_file)
        for i in range(4000):  # one commit each, back to back
            await store.put_events("m", [(f"e{i:06d}", payload)], now=1_000.0, ttl_seconds=60)
        restarts = _wal_restarts(wal_file) - restarts
        stored = await asyncio.to_thread(_stored_ids, store)
    finally:
        await store.close()
    assert len(stored) == 4001  # every decision kept
    assert restarts >= 2, restarts


def _database_bytes(store: SqliteStore) -> int:
    with sqlite3.connect(store.path) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        return int(pages) * int(db.execute("PRAGMA page_size").fetchone()[0])


async def test_a_ranking_sized_decision_takes_no_page_of_its_own(tmp_path: Path) -> None:
    """Decisions of about 1.1 KB (a 10-candidate ranking) take about their own size in
    the database, not a 4 KiB overflow page each."""
    store = SqliteStore(tmp_path)
    payload = "x" * 1100
    try:
        before = await asyncio.to_thread(_database_bytes, store)
        for i in range(50):
            events = [(f"e{i:03d}{j:03d}", payload) for j in range(20)]
            await store.put_events("m", events, now=1_000.0, ttl_seconds=60)
        grown = await asyncio.to_thread(_database_bytes, store) - before
    finally:
        await store.close()
    assert grown < 2 * 1000 * len(payload), grown


async def test_an_existing_database_keeps_its_page_size(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "banditree.sqlite3") as db:
        db.execute("PRAGMA page_size=4096")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE kept (x)")
    store = SqliteStore(tmp_path)
    try:
        await store.put_events("m", [("e", "p")], now=1_000.0, ttl_seconds=60)
        assert await store.peek_event("m", "e", now=1_000.0) is not None
        with sqlite3.connect(store.path) as db:
            assert db.execute("PRAGMA page_size").fetchone()[0] == 4096
    finally:
        await store.close()


async def test_a_checkpoint_load_never_waits_for_the_writer(tmp_path: Path) -> None:
    """Loads run in worker threads beside the event loop's commits: a load that took the
    writer's mutex held every commit behind it while it read the blob (after 10,000
    creates, the loop waited 5-10 ms at a time behind learners loading their first
    checkpoints).  A load while another thread holds the writer must finish at once."""
    store = SqliteStore(tmp_path)
    await store.hold_model("m")
    token = await store.acquire_lease("m", "h", ttl_seconds=5, now=1.0)
    assert token is not None
    blob = dumps(build_learner(CONFIG))
    info = await store.save_checkpoint(
        "m", version=1, blob=blob, keep=5, now=2.0, offset=0, acked_at=0.0, token=token
    )
    try:
        with store._mutex:  # a long write transaction under way in another thread
            loaded = await asyncio.wait_for(store.load_checkpoint("m", info.sequence), 2.0)
        assert loaded == blob
        assert await store.load_checkpoint("m", info.sequence + 1) is None
    finally:
        await store.close()


AWKWARD_IDS = ["plain", 'quo"te\\back', "nul\x00in", "é\u2028\x01", "x" * 128]
ACKED = [1_000_000.0, 1732500000.1234567, 0.1, 1 / 3, 0.0, 1e29, 2.5e-30]


async def test_a_log_read_in_one_step_is_the_rows_exactly(tmp_path: Path) -> None:
    from service.store.sqlite.log import append_entry

    store = SqliteStore(tmp_path)
    entries = [
        (f"{event_id}-{i}", json.dumps({"a": i, "s": event_id}), None if i % 3 else '{"loss": 1}', at)
        for i, (event_id, at) in enumerate(
            (e, a) for e in AWKWARD_IDS for a in ACKED
        )
    ]  # fmt: skip
    store._tx(lambda db: [append_entry(db, "m", *entry) for entry in entries])
    for after, limit in ((0, 1000), (0, 7), (10, 5), (len(entries), 10), (3, 1)):
        read = await store.read_log("m", after=after, limit=limit)
        rows = store._tx(functools.partial(_rows, args=("m", after, limit)))
        assert [tuple(vars(e).values()) for e in read] == rows
        assert all(type(e.acked_at) is float and type(e.offset) is int for e in read)
    assert await store.read_log("other", after=0, limit=10) == []
    await store.close()


#: decisions as stored (not escaped): JSON with floats at the edges of what a REAL or a
#: JSON number holds, unicode, nesting; raw control characters, an empty text
AWKWARD_DECISIONS = [
    json.dumps({"uid": "u", "decision": {"context": [1e-30, 2.5e-308, 5e-324, 1.7976931348623157e308,
                -0.0, 0.1, 1 / 3], "extras": {"nested": {"deep": [1, [2, {"x": None}]]}}}}),
    json.dumps({"uid": "u", "s": "é\u2028😀 quo\"te back\\"}, ensure_ascii=False),
    '{"uid": "u", "raw": "nul\x00in ctl\x01\x1f"}',
    "",
    "not json at all",
]  # fmt: skip


def _count_row_reads(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> tuple[Callable[[Callable[[sqlite3.Connection], Any]], Any], list[int]]:
    """The store's own transactions, and a list that grows by one at each of its
    transactions from now on (a log read in one step takes none)."""
    tx, calls = store._tx, []

    def counted(work: Callable[[sqlite3.Connection], Any]) -> Any:
        calls.append(1)
        return tx(work)

    monkeypatch.setattr(store, "_tx", counted)
    return tx, calls


async def test_a_log_read_in_one_step_gives_each_decision_as_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.store.sqlite.log import append_entry

    store = SqliteStore(tmp_path)
    texts = AWKWARD_DECISIONS * 3
    store._tx(
        lambda db: [append_entry(db, "m", f"e{i}", d, None, 1.5) for i, d in enumerate(texts)]
    )
    tx, row_reads = _count_row_reads(store, monkeypatch)
    for after, limit in ((0, 100), (2, 4), (len(texts) - 1, 10)):
        read = await store.read_log("m", after=after, limit=limit)
        assert [e.decision for e in read] == texts[after : after + limit]
        assert [tuple(vars(e).values()) for e in read] == tx(
            functools.partial(_rows, args=("m", after, limit))
        )
    assert not row_reads  # each one a read in one step
    await store.close()


async def test_a_decision_holding_the_separator_reads_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.store.sqlite.log import _SEPARATOR, append_entry

    store = SqliteStore(tmp_path)
    texts = ["{}", f'{{"s": "a{_SEPARATOR}b"}}', f"{_SEPARATOR}", '{"t": 1}']
    store._tx(
        lambda db: [append_entry(db, "m", f"e{i}", d, "{}", 2.0) for i, d in enumerate(texts)]
    )
    _, row_reads = _count_row_reads(store, monkeypatch)
    assert [e.decision for e in await store.read_log("m", after=0, limit=10)] == texts
    assert row_reads == [1]  # read row by row
    assert [e.decision for e in await store.read_log("m", after=3, limit=10)] == texts[3:]
    assert row_reads == [1]  # a batch without one: in one step
    await store.close()


def _rows(db: sqlite3.Connection, args: tuple[object, ...]) -> list[object]:
    from service.store.sqlite.log import _READ_ROWS

    return db.execute(_READ_ROWS, args).fetchall()


@pytest.mark.parametrize("acked_at", [1e300, 4.9e-324, -1e-200])
async def test_a_time_outside_the_exact_range_reads_the_rows(
    tmp_path: Path, acked_at: float
) -> None:
    from service.store.sqlite.log import append_entry

    store = SqliteStore(tmp_path)
    store._tx(lambda db: append_entry(db, "m", "e", "{}", "{}", acked_at))
    store._tx(lambda db: append_entry(db, "m", "f", "{}", "{}", 5.0))
    (first, second) = await store.read_log("m", after=0, limit=10)
    assert (first.acked_at, second.acked_at) == (acked_at, 5.0)
    await store.close()


async def test_a_sqlite_without_json_functions_reads_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.store.sqlite import log

    assert log.one_row_reads()  # this machine's SQLite has them
    monkeypatch.setattr(log, "one_row_reads", lambda: False)
    store = SqliteStore(tmp_path)
    store._tx(lambda db: log.append_entry(db, "m", "e", '{"a": 1}', None, 7.5))
    (entry,) = await store.read_log("m", after=0, limit=10)
    assert (entry.offset, entry.event_id, entry.decision, entry.feedback, entry.acked_at) == (
        1, "e", '{"a": 1}', None, 7.5,
    )  # fmt: skip
    assert await store.read_log("m", after=1, limit=10) == []
    await store.close()


async def test_the_learners_chunk_is_one_step_unless_a_text_holds_the_separator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from service.store import LogChunk
    from service.store.sqlite.log import _SEPARATOR, append_entry

    store = SqliteStore(tmp_path)
    texts = [*AWKWARD_DECISIONS, "{}", f"a{_SEPARATOR}b", "{}"]
    feedbacks = ['{"loss":1.0}', None, "", "=", '{"x": 1}', None, "{}", f"{_SEPARATOR}"]
    store._tx(
        lambda db: [
            append_entry(db, "m", f"e{i}", d, feedbacks[i], 1.5 + i) for i, d in enumerate(texts)
        ]
    )
    _, row_reads = _count_row_reads(store, monkeypatch)
    whole = await store.read_log_chunk("m", after=0, limit=100)
    assert row_reads == [1]  # a text holds the separator: read row by row
    assert whole.feedbacks == feedbacks and whole.decisions == texts
    part = await store.read_log_chunk("m", after=0, limit=6)
    assert row_reads == [1] and part == whole[:6]  # in one step
    assert await store.read_log_chunk("m", after=7, limit=1) == whole[7:]  # (read_log's)
    assert whole == LogChunk.of(await store.read_log("m", after=0, limit=100))
    await store.close()


async def test_the_learners_chunk_tells_expiries_empty_feedbacks_and_gaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiries among feedbacks are read in one step; a chunk that holds both an expiry
    and an empty feedback, or whose offsets have a gap, is read by ``read_log``: the
    same columns either way."""
    from service.store import LogChunk
    from service.store.sqlite.log import append_entry

    store = SqliteStore(tmp_path)
    feedbacks = ['{"loss":1.0}', None, '{"loss":0.0}', None, "", '{"loss":1.0}', None, "{}"]
    store._tx(
        lambda db: [
            append_entry(db, "m", f"e{i}", "b1:00", fb, 1_764_420_000.0 + i)
            for i, fb in enumerate(feedbacks)
        ]
    )
    reads: list[int] = []
    read_log = store.read_log

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return await read_log(*args, **kwargs)

    monkeypatch.setattr(store, "read_log", counted)
    expiries = await store.read_log_chunk("m", after=0, limit=4)  # None, no empty text
    assert reads == [] and expiries.feedbacks == feedbacks[:4]
    assert expiries.offsets == [1, 2, 3, 4] and expiries.acked_at[3] == 1_764_420_003.0
    assert expiries == LogChunk.of(await read_log("m", after=0, limit=4))
    empty = await store.read_log_chunk("m", after=4, limit=2)  # an empty text, no None
    assert reads == [] and empty.feedbacks == ["", '{"loss":1.0}']
    both = await store.read_log_chunk("m", after=1, limit=4)  # None and an empty text
    assert reads == [1] and both.feedbacks == feedbacks[1:5]
    store._tx(lambda db: db.execute("DELETE FROM log WHERE model = 'm' AND offset = 3"))
    gap = await store.read_log_chunk("m", after=0, limit=3)
    assert reads == [1, 1] and gap.offsets == [1, 2, 4]
    assert gap == LogChunk.of(await read_log("m", after=0, limit=3))
    await store.close()


@pytest.mark.parametrize(
    "acked_at", [1.7e9 + 1 / 7, 2.0**31 + 2.0**-21, 1e6 + 1 / 7, 0.0, -5.5, 1e300, 2.5]
)
async def test_the_learners_chunk_keeps_each_time_exactly(
    tmp_path: Path, acked_at: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Times on the chunk's grid (every one from 2004 on) are read in one step, exactly;
    a time off it has the chunk read by ``read_log``, exactly too."""
    from service.store.sqlite.log import append_entry

    store = SqliteStore(tmp_path)
    store._tx(lambda db: append_entry(db, "m", "e", "{}", "{}", acked_at))
    store._tx(lambda db: append_entry(db, "m", "f", "{}", None, 1_764_420_000.123456))
    reads: list[int] = []
    read_log = store.read_log

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(1)
        return await read_log(*args, **kwargs)

    monkeypatch.setattr(store, "read_log", counted)
    chunk = await store.read_log_chunk("m", after=0, limit=10)
    assert chunk.acked_at == [acked_at, 1_764_420_000.123456]
    assert [math.copysign(1, t) for t in chunk.acked_at] == [math.copysign(1, acked_at), 1]
    grid = 0 < acked_at < 2.0**40 and (acked_at * 2**22).is_integer()
    assert len(reads) == (0 if grid else 1)
    await store.close()
