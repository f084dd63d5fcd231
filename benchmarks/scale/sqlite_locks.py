"""Who holds the embedded store's write lock, and for how long: a probe for stalls.

:func:`install` (called by :mod:`benchmarks.scale.stall_probe` when it starts a served
process) wraps the store's writer mutex in :class:`TimedLock` and times each
transaction's ``BEGIN IMMEDIATE``, writing a JSON line to ``OUT`` for every wait or hold
of :data:`RECORD_SECONDS` or more: the thread, the caller and the milliseconds.  The
event loop's thread waiting on the mutex says another thread held it; a long
``BEGIN IMMEDIATE`` says another connection held SQLite's own write lock.

A development tool; the service itself knows nothing of it.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

RECORD_SECONDS = 0.005


class TimedLock:
    """A ``threading.Lock`` that reports long waits and holds to ``write(record)``."""

    def __init__(self, lock: Any, write: Any) -> None:
        self._lock = lock
        self._write = write
        self._since = 0.0
        self._holder = ""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        asked = time.monotonic()
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._since = time.monotonic()
            waited = self._since - asked
            caller = _caller(2)
            if waited >= RECORD_SECONDS:
                self._write("wait", asked, waited, caller, held_by=self._holder)
            self._holder = f"{threading.current_thread().name} {caller}"
        return got

    def release(self) -> None:
        held = time.monotonic() - self._since
        holder, since = self._holder, self._since
        self._lock.release()
        if held >= RECORD_SECONDS:
            self._write("hold", since, held, holder)

    def locked(self) -> bool:
        return bool(self._lock.locked())

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _caller(depth: int) -> str:
    """The innermost two frames of ours above the lock: where it was taken."""
    frame = sys._getframe(depth)
    names = []
    while frame is not None and len(names) < 2:
        if "/service/" in frame.f_code.co_filename:
            names.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
        frame = frame.f_back  # type: ignore[assignment]
    return " < ".join(names) or "?"


def install(out: Path) -> None:
    """Wrap every embedded store opened from now on (see the module)."""
    from service.store.sqlite import connection

    sink_lock = threading.Lock()

    def write(kind: str, at: float, seconds: float, where: str, **extra: str) -> None:
        record = {
            "kind": kind, "at": at, "ms": 1e3 * seconds, "where": where,
            "thread": threading.current_thread().name, **extra,
        }  # fmt: skip
        with sink_lock, out.open("a") as sink:  # rare (>= RECORD_SECONDS): opened each time
            sink.write(json.dumps(record) + "\n")

    init = connection.SqliteBase.__init__

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._mutex = TimedLock(self._mutex, write)
        self._checkpointer.write_lock = self._mutex
        db = self._db

        class TimedBegin:  # the writer connection, BEGIN timed
            def __getattr__(self, name: str) -> Any:
                return getattr(db, name)

            def execute(self, sql: str, *args: Any) -> Any:
                if sql != "BEGIN IMMEDIATE":
                    return db.execute(sql, *args)
                start = time.monotonic()
                try:
                    return db.execute(sql, *args)
                finally:
                    took = time.monotonic() - start
                    if took >= RECORD_SECONDS:
                        write("begin", start, took, _caller(2))

        self._db = TimedBegin()

    connection.SqliteBase.__init__ = timed_init  # type: ignore[method-assign]


def report(path: Path, since: float) -> None:
    """Print the event loop's waits for the writer from ``since`` on, by who held it, and
    its slow ``BEGIN IMMEDIATE`` (another connection held SQLite's write lock, or the
    thread waited for a CPU or the GIL after the statement)."""
    if not path.exists():
        return
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    loop = [r for r in records if r["at"] >= since and r["thread"] == "MainThread"]
    waits: dict[str, list[float]] = {}
    for record in loop:
        if record["kind"] == "wait":
            thread, _, where = record["held_by"].partition(" ")
            thread = "loop" if thread == "MainThread" else thread.rstrip("_0123456789")
            holder = f"{where.split(' < ')[-1]} ({thread})"
            waits.setdefault(holder, []).append(record["ms"])
    begins = [r["ms"] for r in loop if r["kind"] == "begin"]
    print(f"the loop's waits for the writer's mutex of {1e3 * RECORD_SECONDS:.0f} ms or more:")
    for holder, ms in sorted(waits.items(), key=lambda item: -sum(item[1])):
        print(
            f"  {len(ms):4d} waits, largest {max(ms):5.1f} ms, {sum(ms):6.1f} ms in all: {holder}"
        )
    print(
        f"  the loop's BEGIN IMMEDIATE of {1e3 * RECORD_SECONDS:.0f} ms or more: {len(begins)}"
        f", largest {max(begins, default=0.0):.1f} ms"
    )
