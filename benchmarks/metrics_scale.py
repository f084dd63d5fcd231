"""/metrics with thousands of models: scrape time and the predict stall it causes.

Starts a real ``banditree`` server (uvicorn, embedded store in a temporary directory),
creates ``--models`` small models, then scrapes ``/metrics`` ``--scrapes`` times while
another client predicts back to back.  Prints the scrape time, the exposition size and
the predict latency during scrapes beside a quiet period, and, as the baseline measured
in the same run, the time the exposition takes to render in one piece (what a scrape
used to block the event loop for).  Targets: scrape < 0.5 s, predict stall < 50 ms.

    python -m benchmarks.metrics_scale [--models 3000] [--scrapes 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from prometheus_client import generate_latest

from service.metrics import ServiceMetrics

ROOT = Path(__file__).resolve().parents[1]
MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}
CONTEXT = {"context": [0.1, 0.2, 0.3, 0.4]}


def start_server(port: int, data_dir: Path, models: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_DATA_DIR": str(data_dir),
        "BANDITREE_PORT": str(port), "BANDITREE_MAX_MODELS": str(models + 10),
        "BANDITREE_LOG_LEVEL": "warning",
    }  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "banditree", "serve"], env=env)
    for _ in range(1200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


async def create_models(url: str, count: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        slots = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with slots:
                (await http.put(f"/v1/models/m{i}", json=MODEL)).raise_for_status()

        await asyncio.gather(*(create(i) for i in range(count)))


def predict_latencies(url: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        while not stop.is_set():
            started = time.perf_counter()
            http.post("/v1/models/m0/predict", json=CONTEXT).raise_for_status()
            out.append(time.perf_counter() - started)


def baseline_render_seconds(models: int) -> float:
    """Render an exposition with the same series in one piece, as a scrape used to."""
    metrics = ServiceMetrics()
    for i in range(models):
        metrics.for_model(f"m{i}")
    started = time.perf_counter()
    generate_latest(metrics.registry)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=3000)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--port", type=int, default=18977)
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(args.port, Path(tmp), args.models)
        try:
            asyncio.run(create_models(url, args.models))
            with httpx.Client(base_url=url, timeout=60) as http:
                http.get("/metrics")  # the first rendering
                quiet: list[float] = []
                stop = threading.Event()
                worker = threading.Thread(target=predict_latencies, args=(url, stop, quiet))
                worker.start()
                time.sleep(3)
                stop.set()
                worker.join()
                busy: list[float] = []
                stop = threading.Event()
                worker = threading.Thread(target=predict_latencies, args=(url, stop, busy))
                worker.start()
                scrapes, size = [], 0
                for _ in range(args.scrapes):
                    started = time.perf_counter()
                    size = len(http.get("/metrics").content)
                    scrapes.append(time.perf_counter() - started)
                    time.sleep(0.3)
                stop.set()
                worker.join()
        finally:
            server.terminate()
            server.wait(timeout=60)
    baseline = baseline_render_seconds(args.models)
    print(f"models: {args.models}, exposition: {size / 1e6:.1f} MB")
    print(f"scrape seconds: median {statistics.median(scrapes):.3f}, max {max(scrapes):.3f}")
    print(f"baseline, rendering in one piece on the loop: {baseline:.3f} s")
    print(f"scrape / baseline: {statistics.median(scrapes) / baseline:.3f}")
    print(
        f"predict ms quiet: median {1e3 * statistics.median(quiet):.2f}, "
        f"max {1e3 * max(quiet):.2f} ({len(quiet)} calls)"
    )
    print(
        f"predict ms while scraping: median {1e3 * statistics.median(busy):.2f}, "
        f"max {1e3 * max(busy):.2f} ({len(busy)} calls)"
    )
    stall = max(busy) - statistics.median(quiet)
    print(f"largest predict stall while scraping: {1e3 * stall:.1f} ms (target < 50)")


if __name__ == "__main__":
    main()
