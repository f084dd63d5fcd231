"""Redis memory under a steady feedback stream: the ``done:`` markers plateau.

One command::

    python -m benchmarks.scale.tombstone_memory [--seconds 420] [--rate 200]

A claimed decision leaves a ``done:`` marker for ``max(ttl, 300 s)`` so that a repeated
feedback gets 409 instead of 404.  Here decisions live 1 s (``ttl``), every one gets its
feedback at once, and a checkpoint every second (3 kept) trims the log, so what Redis
holds is the markers of the last ~301 s.  The run samples ``used_memory`` and the key
count of a ``redis-server`` of its own (no persistence, a spare port) every 15 s; the
figure is the memory's growth over the last 90 s against its growth over the first
300 s (0 = a plateau).  Redis expires keys a little after their time, so the plateau
sets in some tens of seconds after 300 s: run at least 420 s.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import time
from typing import Any

import redis

from benchmarks.scale.log_scale import make_pairs
from service.store import RedisStore

INTERVAL_SECONDS = 15.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.close()
    return process


async def stream(port: int, seconds: float, rate: int) -> list[dict[str, float]]:
    """Feed ``rate`` decisions and feedbacks a second for ``seconds``; samples of memory."""
    store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0", timeout_seconds=5.0)
    info = redis.Redis(port=port)
    pairs = make_pairs(rate)
    await store.hold_model("m")
    token = await store.acquire_lease("m", "bench", ttl_seconds=3600, now=time.time())
    assert token is not None
    samples: list[dict[str, float]] = []
    started = next_sample = time.monotonic()
    tick = 0
    while (elapsed := time.monotonic() - started) < seconds:
        if time.monotonic() >= next_sample:
            memory = info.info("memory")["used_memory"]
            samples.append({"seconds": elapsed, "used_memory": memory, "keys": info.dbsize()})
            next_sample += INTERVAL_SECONDS
        now = time.time()
        batch = [(f"t{tick}-{e}", d, f) for e, d, f in pairs]
        for start in range(0, len(batch), 50):  # as the service's clients would, in parts
            part = batch[start : start + 50]
            await store.put_events("m", [(e, d) for e, d, _ in part], now=now, ttl_seconds=1.0)
            await asyncio.gather(*(store.append_feedback("m", e, f, now=now) for e, _, f in part))
        last = (await store.log_bounds("m")).last
        await store.save_checkpoint(
            "m", version=tick, blob=b"x" * 8000, keep=3, now=now, offset=last, acked_at=0.0,
            token=token,
        )  # fmt: skip
        await store.expire_events("m", now=now, limit=10_000, log=False)
        tick += 1
        await asyncio.sleep(max(0.0, started + tick - time.monotonic()))
    info.close()
    await store.close()
    return samples


def growth(samples: list[dict[str, Any]], start: float, end: float) -> float:
    """Bytes per second of ``used_memory`` between the samples nearest ``start`` and ``end``."""
    first = min(samples, key=lambda s: abs(s["seconds"] - start))
    last = min(samples, key=lambda s: abs(s["seconds"] - end))
    return float(last["used_memory"] - first["used_memory"]) / (last["seconds"] - first["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=420.0, help="longer than 300 s")
    parser.add_argument("--rate", type=int, default=200, help="feedbacks per second")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("needs redis-server")
    port = free_port()
    process = start_redis(port)
    try:
        samples = asyncio.run(stream(port, args.seconds, args.rate))
    finally:
        process.kill()
        process.wait()
    print(f"{'seconds':>8} {'used_memory':>14} {'keys':>8}")
    for s in samples:
        print(f"{s['seconds']:8.0f} {s['used_memory']:14,.0f} {s['keys']:8,.0f}")
    rising = growth(samples, 0.0, 300.0)
    tail = growth(samples, samples[-1]["seconds"] - 90.0, samples[-1]["seconds"])
    print(f"memory growth over the first 300 s: {rising / 1000:,.1f} KB/s")
    print(f"memory growth over the last 90 s: {tail / 1000:,.1f} KB/s")
    print(f"last 90 s / first 300 s: {tail / rising:.2f} (0 = a plateau)")


if __name__ == "__main__":
    main()
