"""Unanswered decisions in waves: expiry keeps up with arrival and the store stops growing.

One command::

    python -m benchmarks.scale.unanswered_waves [--decisions 150000] [--wait 10] [--after 25]

A real server (``uvicorn``, the embedded SQLite store in a fresh temporary data
directory, a spare port) serves one small model whose reward wait is ``--wait``
seconds.  Two waves of ``--decisions`` predicts each (batches of ``--batch`` contexts,
four requests in flight) get no feedback.  After each wave the run waits until
``--after`` seconds past the wave's last deadline, then counts the decisions still
pending and the size of the store (database and WAL files).  The goals (issue 41):
at most 1 % still pending after each wave, and the store after the second wave at
most 1.3 x its size after the first.

Pending decisions are counted on a read-only connection to the server's database (a
WAL reader never blocks the server's writer).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
MODEL = {"n_features": 4, "n_actions": 3}
#: requests in flight at once
IN_FLIGHT = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def store_bytes(data_dir: Path) -> int:
    """Bytes of the embedded store's database and WAL files."""
    return sum(p.stat().st_size for p in data_dir.glob("banditree.sqlite3*") if p.is_file())


def pending(data_dir: Path) -> int:
    """Decisions the store holds as pending, read on a connection of its own."""
    db = sqlite3.connect(f"file:{data_dir / 'banditree.sqlite3'}?mode=ro", uri=True, timeout=30.0)
    try:
        return int(
            db.execute("SELECT COUNT(*) FROM decisions WHERE state = 'pending'").fetchone()[0]
        )
    finally:
        db.close()


async def wave(url: str, model: str, decisions: int, batch: int) -> float:
    """Make ``decisions`` decisions of ``model`` with no feedback; the time the last one's
    answer came (``time.time()``)."""
    contexts = [[0.1 * (i % 7), 0.2, -0.3, 0.05 * (i % 11)] for i in range(batch)]
    sizes = [min(batch, decisions - start) for start in range(0, decisions, batch)]
    queue: asyncio.Queue[int] = asyncio.Queue()
    for size in sizes:
        queue.put_nowait(size)

    async def worker(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            size = queue.get_nowait()
            answer = await http.post(
                f"/v1/models/{model}/predict", json={"contexts": contexts[:size]}
            )
            answer.raise_for_status()

    async with httpx.AsyncClient(base_url=url, timeout=60.0) as http:
        await asyncio.gather(*(worker(http) for _ in range(IN_FLIGHT)))
    return time.time()


def run_waves(
    url: str, data_dir: Path, *, decisions: int, wait_seconds: float, after_seconds: float,
    batch: int, waves: int = 2, model: str = "unanswered",
) -> list[dict[str, Any]]:  # fmt: skip
    """Create ``model`` (reward wait ``wait_seconds``) on the server at ``url`` whose store
    is ``data_dir``, then the waves; per wave, what was pending and the store's bytes
    ``after_seconds`` past its last deadline."""
    created = httpx.put(
        f"{url}/v1/models/{model}", json={**MODEL, "event_ttl_seconds": wait_seconds}, timeout=60.0
    )
    created.raise_for_status()
    figures = []
    for number in range(1, waves + 1):
        started = time.time()
        last = asyncio.run(wave(url, model, decisions, batch))
        time.sleep(max(0.0, last + wait_seconds + after_seconds - time.time()))
        figures.append({
            "wave": number, "decisions": decisions, "sent_seconds": round(last - started, 1),
            "pending": pending(data_dir), "store_bytes": store_bytes(data_dir),
        })  # fmt: skip
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=150_000)
    parser.add_argument("--wait", type=float, default=10.0, help="reward wait (seconds)")
    parser.add_argument("--after", type=float, default=25.0, help="seconds past the wait")
    parser.add_argument("--batch", type=int, default=1000, help="contexts per predict")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
        env.update(PYTHONPATH=str(ROOT), BANDITREE_DATA_DIR=str(data_dir),
                   BANDITREE_MAX_BATCH=str(args.batch))  # fmt: skip
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "service.main:create_app_from_env", "--factory",
             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
            env=env, cwd=ROOT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(url + "/readyz", timeout=1.0).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start")
                time.sleep(0.2)
            figures = run_waves(
                url, data_dir, decisions=args.decisions, wait_seconds=args.wait,
                after_seconds=args.after, batch=args.batch,
            )  # fmt: skip
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    for row in figures:
        print(json.dumps(row))
    first, second = figures[0], figures[-1]
    print(
        f"pending after each wave: {[row['pending'] / row['decisions'] for row in figures]} "
        f"(goal <= 0.01); store growth: {second['store_bytes'] / first['store_bytes']:.3f} "
        "(goal <= 1.3)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
