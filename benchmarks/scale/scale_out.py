"""Scale-out figures with Redis: staleness p50/p99 at given feedback rates, --workers 2 vs 1.

One command::

    python -m benchmarks.scale.scale_out [--rates 200,1000] [--seconds 10] [--rounds 2]

Needs Redis on 127.0.0.1:6379 (keys under a unique prefix, deleted afterwards).

1. Staleness: ``banditree serve`` (one process, role all) and an open-loop client that
   sends predict + feedback pairs at each rate for ``--seconds``; the p50 / p99 of
   ``banditree_model_staleness_seconds`` (time from an acknowledged feedback to the
   process serving a snapshot that includes it), interpolated in its histogram
   buckets, with the rate actually reached.
2. Predict throughput of ``banditree serve --workers 2`` against ``--workers 1``: client
   threads in another process send single-context predicts for ``--seconds``; the
   two set-ups alternate for ``--rounds`` rounds and the medians are compared
   (goal >= 1.6x on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/0"
MODEL = {"kind": "dgt", "n_features": 16, "n_actions": 10, "height": 6}
CONTEXT = [0.1 * i for i in range(16)]


def serve(workers: int, prefix: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_REDIS_URL": REDIS_URL,
        "BANDITREE_REDIS_PREFIX": prefix, "BANDITREE_LOG_LEVEL": "warning",
    }  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "banditree", "serve", "--workers", str(workers),
         "--port", str(port)], env=env, cwd=ROOT,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the service did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def quantile_from_buckets(text: str, q: float) -> float:
    """The ``q`` quantile of the staleness histogram (linear inside a bucket)."""
    # the service's renderer writes the model label first, prometheus_client le first
    pattern = (
        r'banditree_model_staleness_seconds_bucket\{(?:model="m",le="([^"]+)"|'
        r'le="([^"]+)",model="m")\} (\S+)'
    )
    buckets = [(float(a or b), float(n)) for a, b, n in re.findall(pattern, text)]
    return bucket_quantile(buckets, q)


def bucket_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """The ``q`` quantile of cumulative histogram buckets ``(le, count)`` (linear inside a
    bucket; the last finite bound when it falls in the ``+Inf`` bucket)."""
    total = buckets[-1][1] if buckets else 0.0
    if total == 0:
        return float("nan")
    previous_le, previous_n = 0.0, 0.0
    for le, n in buckets:
        if n >= q * total:
            if le == float("inf"):
                return previous_le
            share = (q * total - previous_n) / max(n - previous_n, 1e-9)
            return previous_le + share * (le - previous_le)
        previous_le, previous_n = le, n
    return previous_le


def staleness(rate: float, seconds: float, port: int) -> dict[str, float]:
    url = f"http://127.0.0.1:{port}/v1/models/m"
    interval = 1.0 / rate
    sent = 0
    with httpx.Client(timeout=10) as http:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            batch = max(1, int(rate * 0.05))  # decisions per predict request
            answer = http.post(f"{url}/predict", json={"contexts": [CONTEXT] * batch}).json()
            for d in answer["decisions"]:
                due = started + sent * interval
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
                http.post(f"{url}/feedback", json={"event_id": d["event_id"], "loss": 0.5})
                sent += 1
        elapsed = time.monotonic() - started
        time.sleep(2.0)
        after = http.get(f"http://127.0.0.1:{port}/metrics").text
    # each rate runs on a fresh service, so the histogram holds this run alone
    return {
        "target_per_second": rate,
        "reached_per_second": sent / elapsed,
        "p50_seconds": quantile_from_buckets(after, 0.5),
        "p99_seconds": quantile_from_buckets(after, 0.99),
    }


def _hammer(url: str, seconds: float, counts: Any, index: int) -> None:
    with httpx.Client(timeout=10) as http:
        done, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            http.post(url, json={"context": CONTEXT})
            done += 1
    counts[index] = done


def predict_throughput(port: int, seconds: float, clients: int) -> float:
    url = f"http://127.0.0.1:{port}/v1/models/m/predict"
    counts = multiprocessing.Array("i", clients)
    workers = [
        multiprocessing.Process(target=_hammer, args=(url, seconds, counts, i))
        for i in range(clients)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="200,1000", help="feedbacks per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4, help="predict client processes")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    figures: dict[str, Any] = {"staleness": []}
    from tests.service.conftest import delete_prefix
    from tests.service.live_server import free_port

    for rate in (float(r) for r in args.rates.split(",")):
        prefix, port = f"banditree-bench:{uuid.uuid4().hex}:", free_port()
        process = serve(1, prefix, port)
        try:
            httpx.put(f"http://127.0.0.1:{port}/v1/models/m", json=MODEL).raise_for_status()
            figures["staleness"].append(staleness(rate, args.seconds, port))
            print(figures["staleness"][-1], flush=True)
        finally:
            stop(process)
            delete_prefix(prefix)
    runs: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for workers in (1, 2):
            prefix, port = f"banditree-bench:{uuid.uuid4().hex}:", free_port()
            process = serve(workers, prefix, port)
            try:
                httpx.put(f"http://127.0.0.1:{port}/v1/models/m", json=MODEL).raise_for_status()
                time.sleep(1.5)  # the other worker picks the model up
                runs[workers].append(predict_throughput(port, args.seconds, args.clients))
                print(f"workers={workers}: {runs[workers][-1]:.0f} predicts/s", flush=True)
            finally:
                stop(process)
                delete_prefix(prefix)
    one, two = statistics.median(runs[1]), statistics.median(runs[2])
    figures.update(predict_per_second_workers_1=one, predict_per_second_workers_2=two)
    figures["workers_2_vs_1_ratio"] = two / one
    print(json.dumps(figures, indent=2))
    print(f"goal --workers 2 >= 1.6x --workers 1: {'met' if two / one >= 1.6 else 'NOT met'}")
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
