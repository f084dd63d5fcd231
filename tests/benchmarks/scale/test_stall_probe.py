"""``benchmarks.scale.stall_probe``: a callback that holds the loop is recorded with its CPU time
and task, and each stall is told apart by where the main thread's time went."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from benchmarks.scale import stall_probe


def test_a_callback_that_holds_the_loop_is_recorded_with_its_cpu_and_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asyncio.events.Handle, "_run", asyncio.events.Handle._run)  # restored
    out = tmp_path / "stalls.jsonl"

    async def hold_the_loop() -> None:
        spent = time.thread_time()
        while time.thread_time() - spent < 0.06:  # 60 ms of CPU without a turn of the loop
            pass

    async def scenario() -> None:
        probe = stall_probe.StallProbe(asyncio.get_running_loop(), out)
        await asyncio.sleep(0.05)
        await asyncio.create_task(hold_the_loop())
        await asyncio.sleep(0.1)  # the watchdog writes what it saw
        probe.stop()

    asyncio.run(scenario())
    records = [json.loads(line) for line in out.read_text().splitlines()]
    callbacks = [r for r in records if r["kind"] == "callback" and r["burst_cpu_ms"] >= 50]
    assert len(callbacks) == 1 and callbacks[0]["name"].startswith("task ")
    assert callbacks[0]["name"].endswith("hold_the_loop")
    assert "hold_the_loop" in stall_probe.burst_where(callbacks[0])
    # a ping waited on it: a stall through which the main thread ran (the share of
    # running against waiting for a CPU depends on the machine's load)
    stalls = [r for r in records if r["kind"] != "callback"]
    assert max(r["main_cpu_ms"] for r in stalls) >= 30


def record(ms: float, main: float, waited: float, others: float, gc_cpu: float = 0.0) -> dict:
    collections = [{"at": 0.0, "ms": gc_cpu, "cpu_ms": gc_cpu, "generation": 2, "main": True}]
    return {
        "kind": "ping", "ms": ms, "main_cpu_ms": main, "main_waited_ms": waited,
        "others_cpu_ms": others, "threads": {"worker": others} if others else {},
        "samples": {"service/x.py:1 f": 3}, "gc": collections if gc_cpu else [],
    }  # fmt: skip


def test_a_stall_is_told_apart_by_where_the_main_threads_time_went() -> None:
    assert stall_probe.cause(record(60, 50, 5, 0)) == ("working", "service/x.py:1 f")
    assert stall_probe.cause(record(60, 5, 50, 0)) == ("starved", "runnable, no CPU")
    assert stall_probe.cause(record(60, 5, 5, 45)) == ("gil", "worker")
    assert stall_probe.cause(record(60, 5, 5, 0)) == ("blocked", "service/x.py:1 f")
    assert stall_probe.cause(record(60, 50, 5, 0, gc_cpu=40))[0] == "gc"
