"""``benchmarks.scale.sqlite_locks``: a wait of the event loop for the embedded store's writer is
recorded with the thread and the call that held it, and reported by holder."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from benchmarks.scale import sqlite_locks
from service.store import SqliteStore
from service.store.sqlite import connection


def test_a_wait_for_the_writer_names_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(connection.SqliteBase, "__init__", connection.SqliteBase.__init__)
    out = tmp_path / "locks.jsonl"
    sqlite_locks.install(out)
    store = SqliteStore(tmp_path / "data")
    started = time.monotonic()
    taken = threading.Event()

    def slow_writer() -> None:  # a worker thread's long transaction
        def work(db: object) -> None:
            taken.set()
            time.sleep(0.05)

        store._tx(work)

    async def main() -> None:
        writer = threading.Thread(target=slow_writer, name="asyncio_7")
        writer.start()
        taken.wait()
        await store.save_model("m", "{}")  # the loop's write waits for it
        writer.join()
        await store.close()

    asyncio.run(main())
    records = [json.loads(line) for line in out.read_text().splitlines()]
    waits = [r for r in records if r["kind"] == "wait" and r["thread"] == "MainThread"]
    assert len(waits) == 1 and waits[0]["ms"] >= 30
    assert waits[0]["held_by"].startswith("asyncio_7 SqliteBase._tx")
    assert "save_model" in waits[0]["where"]
    holds = [r for r in records if r["kind"] == "hold" and r["thread"] == "asyncio_7"]
    assert holds and holds[0]["ms"] >= 50
    sqlite_locks.report(out, started)
    assert "1 waits" in capsys.readouterr().out
