"""Where a served process's event-loop stalls go: a watchdog inside ``banditree serve``.

    python -m benchmarks.scale.stall_probe OUT.jsonl [serve options]

runs ``banditree serve`` on the standard library's event loop (whose callbacks can be
timed one by one; uvloop's cannot) with a watchdog thread that pings the loop every few
milliseconds (``call_soon_threadsafe``) and samples the main thread's stack at each step,
and writes JSON lines to ``OUT.jsonl``.  Times are ``time.monotonic``, the same clock in
every process of the machine, so a client can match its slow requests.

- ``ping``: a ping answered :data:`STALL_SECONDS` late or more (``watchdog late``: the
  watchdog itself woke that late, so a stall that began meanwhile is seen there), with
  the main thread's CPU time over it (working on the loop), its wait for a CPU while
  runnable (``schedstat``: the machine's other work), the other threads' CPU (holding
  the GIL), the stack samples and the garbage collections that ran meanwhile.
- ``callback``: one callback of the loop (a task's step, a timer) that took
  :data:`BURST_SECONDS` of the main thread's CPU or more: the work a request waits
  behind, whatever the machine's load, with its task's name and the stack samples.

With the embedded store, :mod:`benchmarks.scale.sqlite_locks` also writes who held its
writer and for how long to ``OUT.locks.jsonl``.

A development tool for :mod:`benchmarks.scale.metrics_scale` (``--probe``); the service itself
knows nothing of it.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.scale import sqlite_locks

STALL_SECONDS = 0.02  # a ping answered this late is a stall
BURST_SECONDS = 0.005  # a callback that ran this much of the main thread's CPU is recorded
POLL_SECONDS = 0.004  # the watchdog's step: pings and stack samples
_OURS = ("/service/", "/banditree/", "/benchmarks/")
_IDLE_FILE = "service/cli.py"  # the innermost frame of ours while the loop waits in poll


def _run_queue_wait(native_id: int) -> float:
    """Seconds the thread has waited runnable for a CPU (``schedstat``'s second field):
    the time the machine's other work took from it."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _thread_cpu(ident: int) -> float:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (OSError, ProcessLookupError):
        return 0.0


def frame_key(frame: Any) -> tuple[str, list[str]]:
    """The innermost frame of the project's own code (else the innermost), and the
    stack as ``file:line function`` lines, innermost first (16 at most)."""
    lines: list[str] = []
    ours = None
    while frame is not None and len(lines) < 16:
        code = frame.f_code
        line = f"{code.co_filename.split('site-packages/')[-1]}:{frame.f_lineno} {code.co_name}"
        lines.append(line)
        mine = code.co_filename.endswith("stall_probe.py")  # this module's own frames
        if ours is None and not mine and any(part in code.co_filename for part in _OURS):
            ours = line
        frame = frame.f_back
    return ours or (lines[0] if lines else "?"), lines


class GcTimes:
    """Every garbage collection's start, time, generation and thread (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.done: collections.deque[dict[str, Any]] = collections.deque(maxlen=4096)
        self._started: dict[int, tuple[float, float]] = {}
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        ident = threading.get_ident()
        if phase == "start":
            self._started[ident] = time.monotonic(), time.thread_time()
            return
        started, cpu = self._started.pop(ident, (None, 0.0))
        if started is not None:
            self.done.append(
                {"at": started, "ms": 1e3 * (time.monotonic() - started),
                 "cpu_ms": 1e3 * (time.thread_time() - cpu),
                 "generation": info["generation"], "collected": info["collected"],
                 "main": ident == threading.main_thread().ident}
            )  # fmt: skip

    def during(self, start: float, end: float) -> list[dict[str, Any]]:
        return [g for g in list(self.done) if g["at"] + g["ms"] / 1e3 >= start and g["at"] <= end]


class StallProbe:
    """The watchdog thread (see the module) for the running ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, out: Path) -> None:
        self.loop, self.out = loop, out
        self.main = threading.main_thread().ident or 0
        self.main_native = threading.main_thread().native_id or 0
        self.gcs = GcTimes()
        self._answered = 0.0
        self.sampled: collections.deque[tuple[float, str]] = collections.deque(maxlen=20_000)
        self.slow: collections.deque[tuple[float, float, float, str]] = collections.deque()
        self._stopped = threading.Event()
        self.time_callbacks()
        self._thread = threading.Thread(target=self._watch, name="stall-probe", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the watchdog (its records are written); the callbacks stay timed."""
        self._stopped.set()
        self._thread.join()

    def _pong(self) -> None:
        self._answered = time.monotonic()

    def _cpu(self) -> tuple[float, float, float, dict[str, float], float]:
        """Now, the main thread's CPU time, the other threads' together (not this one's),
        each other thread's by name, and the main thread's wait for a CPU."""
        others = {
            t.name: _thread_cpu(t.ident or 0)
            for t in threading.enumerate()
            if t.ident not in (self.main, threading.get_ident())
        }
        main = _thread_cpu(self.main)
        others_total = time.process_time() - time.thread_time() - main
        return time.monotonic(), main, others_total, others, _run_queue_wait(self.main_native)

    def _record(self, kind: str, before: Any, end: float, samples: Any, stack: Any) -> dict:
        _, main, others, threads, waited = self._cpu()
        busy = {k: round(1e3 * (v - before[3].get(k, 0.0)), 1) for k, v in threads.items()}
        return {
            "kind": kind, "at": before[0], "ms": round(1e3 * (end - before[0]), 1),
            "main_cpu_ms": round(1e3 * (main - before[1]), 1),
            "others_cpu_ms": round(1e3 * (others - before[2]), 1),
            "main_waited_ms": round(1e3 * (waited - before[4]), 1),
            "threads": {k: v for k, v in busy.items() if v >= 1.0},
            "samples": dict(samples), "stack": stack,
            "gc": self.gcs.during(before[0], end), "load": os.getloadavg()[0],
        }  # fmt: skip

    def _others_at(self) -> dict[str, list[str]]:
        names = {t.ident: t.name for t in threading.enumerate()}
        frames = sys._current_frames()
        at = {}
        for ident, frame in frames.items():
            if ident not in (self.main, threading.get_ident()):
                try:
                    at[names.get(ident, str(ident))] = frame_key(frame)[1][:6]
                except AttributeError:
                    continue
        return at

    def _sample(self, samples: collections.Counter[str]) -> None:
        try:
            key, _ = frame_key(sys._current_frames().get(self.main))
        except AttributeError:  # 3.11: a frame popped while it was walked
            key = "?"
        samples[key] += 1
        self.sampled.append((time.monotonic(), key))

    def _watch(self) -> None:
        """Ping and sample (see the module); write the stalls and the slow callbacks."""
        with self.out.open("a") as out:
            mark = self._cpu()
            while not self._stopped.is_set():
                time.sleep(POLL_SECONDS)
                self._sample(collections.Counter())
                before = self._cpu()
                if before[0] - mark[0] >= STALL_SECONDS + POLL_SECONDS:
                    record = self._record("watchdog late", mark, before[0], {}, [])
                    # where the other threads are as the watchdog gets in: one that held
                    # the interpreter through a long call is just past it
                    record["others_at"] = self._others_at()
                    out.write(json.dumps(record) + "\n")
                waiting: collections.Counter[str] = collections.Counter()
                self._answered = 0.0
                self.loop.call_soon_threadsafe(self._pong)
                while not self._answered and not self._stopped.is_set():
                    time.sleep(POLL_SECONDS)
                    self._sample(waiting)
                if self._answered - before[0] >= STALL_SECONDS:
                    record = self._record("ping", before, self._answered, waiting, [])
                    out.write(json.dumps(record) + "\n")
                while self.slow:
                    out.write(json.dumps(self._callback_record(*self.slow.popleft())) + "\n")
                out.flush()
                mark = self._cpu()

    def _callback_record(self, at: float, end: float, cpu: float, name: str) -> dict:
        samples = collections.Counter(k for t, k in list(self.sampled) if at <= t <= end)
        return {
            "kind": "callback", "at": at, "ms": round(1e3 * (end - at), 1),
            "burst_cpu_ms": round(1e3 * cpu, 1), "name": name, "samples": dict(samples),
            "gc": self.gcs.during(at, end),
        }  # fmt: skip

    def time_callbacks(self) -> None:
        """Time every callback of the loop on the main thread's CPU clock (the standard
        library's loop runs each one through ``Handle._run``); queue the slow ones."""
        run = asyncio.events.Handle._run
        slow = self.slow

        def timed(handle: asyncio.Handle) -> None:
            at, cpu = time.monotonic(), time.thread_time()
            run(handle)
            spent = time.thread_time() - cpu
            if spent >= BURST_SECONDS:
                slow.append((at, time.monotonic(), spent, _callback_name(handle)))

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]


def _callback_name(handle: asyncio.Handle) -> str:
    """The task a callback stepped (its coroutine's name), else the callback's own name."""
    callback = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        return f"task {task.get_coro().__qualname__}"  # type: ignore[union-attr]
    return getattr(callback, "__qualname__", repr(callback))


def _gc_cpu_ms(record: dict[str, Any]) -> float:
    return sum(g.get("cpu_ms", g["ms"]) for g in record["gc"] if g["main"])


def _generations(record: dict[str, Any]) -> str:
    return f"a collection, generation {max(g['generation'] for g in record['gc'] if g['main'])}"


def burst_where(record: dict[str, Any]) -> str:
    """Where a slow callback's CPU went: a collection that took half of it, else its
    task, and the most sampled frame of ours."""
    if _gc_cpu_ms(record) >= record["burst_cpu_ms"] / 2:
        return _generations(record)
    samples = {k: n for k, n in record["samples"].items() if not k.startswith("?")}
    return record["name"] + (f" at {max(samples, key=samples.get)}" if samples else "")


def cause(record: dict[str, Any]) -> tuple[str, str]:
    """A stall's kind and where.  The main thread spent the stall running (``working``:
    the most sampled frame of ours), waiting runnable for a CPU (``starved``: the
    machine's other work) or asleep: waiting for the GIL (``gil``: the busiest other
    thread) or in a call that sleeps (``blocked``: I/O, a lock; the most sampled frame).
    A collection on the main thread that took half the stall is ``gc``."""
    ms, running, waited = record["ms"], record["main_cpu_ms"], record.get("main_waited_ms", 0.0)
    samples = record["samples"]
    where = max(samples, key=samples.get) if samples else "(not sampled)"
    if _gc_cpu_ms(record) >= running / 2 and running >= ms / 4:
        return "gc", _generations(record)
    asleep = ms - running - waited
    if running >= max(waited, asleep):
        return "working", where
    if waited >= asleep:
        return "starved", "runnable, no CPU"
    if record["others_cpu_ms"] >= asleep / 2:
        threads = record["threads"]
        return "gil", max(threads, key=threads.get) if threads else "?"
    return "blocked", where


def print_bursts(bursts: list[dict[str, Any]]) -> None:
    """The loop's slow callbacks by where their CPU went: the work a request waits
    behind, whatever the machine's load."""
    by: dict[str, list[float]] = collections.defaultdict(list)
    for record in bursts:
        by[burst_where(record)].append(record["burst_cpu_ms"])
    largest = max((r["burst_cpu_ms"] for r in bursts), default=0.0)
    print(
        f"main-thread CPU of one callback of the loop: largest {largest:.1f} ms; "
        f"{len(bursts)} of {1e3 * BURST_SECONDS:.0f} ms or more, by where:"
    )
    for where, ms in sorted(by.items(), key=lambda item: -max(item[1]))[:10]:
        print(f"  {len(ms):4d} bursts, largest {max(ms):5.1f} ms: {where}")


def report(
    path: Path, predictions: list[tuple[float, float]], quiet: float, goal_ms: float
) -> None:
    """Print the probe's stalls by cause, and which of them the slow predictions met."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    if predictions:  # the timed windows only (the creates before them stall too)
        records = [r for r in records if r["at"] >= predictions[0][0]]
    bursts = [r for r in records if r["kind"] == "callback"]
    records = [r for r in records if r["kind"] != "callback"]
    print_bursts(bursts)
    by: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    for record in records:
        by[cause(record)].append(record["ms"])
    print(
        f"loop stalls >= {1e3 * STALL_SECONDS:.0f} ms while predictions were timed: {len(records)}"
    )
    for (kind, where), ms in sorted(by.items(), key=lambda item: -max(item[1])):
        print(f"  {kind:11s} {len(ms):4d} stalls, largest {max(ms):6.1f} ms: {where}")
    working = [r["main_cpu_ms"] for r in records]
    print(f"  largest main-thread CPU within one stall: {max(working, default=0.0):.1f} ms")
    slow = [(at, 1e3 * (s - quiet)) for at, s in predictions if 1e3 * (s - quiet) > goal_ms]
    print(f"predictions stalled over {goal_ms:.0f} ms: {len(slow)}")
    for at, ms in slow:
        met = [r for r in records if r["at"] <= at + ms / 1e3 and r["at"] + r["ms"] / 1e3 >= at]
        causes = "; ".join(f"{r['ms']:.0f} ms {'/'.join(cause(r))}" for r in met)
        print(f"  {ms:6.1f} ms: {causes or 'no loop stall (the client, or the network)'}")


def _probed_factory(out: Path) -> Any:
    """``create_app_from_env`` wrapped: the probe starts with the app's lifespan."""
    import service.main

    create = service.main.create_app_from_env

    def create_app_from_env() -> Any:
        app = create()
        inner = app.router.lifespan_context

        def lifespan(app_: Any) -> Any:
            StallProbe(asyncio.get_running_loop(), out)
            return inner(app_)

        app.router.lifespan_context = lifespan
        return app

    return create_app_from_env


def main() -> None:
    import uvicorn

    import service.main
    from banditree_cli import app

    out = Path(sys.argv[1])
    sqlite_locks.install(out.with_suffix(".locks.jsonl"))
    service.main.create_app_from_env = _probed_factory(out)  # type: ignore[assignment]
    run = uvicorn.run

    def run_on_asyncio(*args: Any, **kwargs: Any) -> None:
        run(*args, **{**kwargs, "loop": "asyncio"})  # callbacks timed one by one

    uvicorn.run = run_on_asyncio
    app(args=["serve", *sys.argv[2:]], prog_name="banditree")


if __name__ == "__main__":
    main()
