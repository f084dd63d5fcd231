"""Thousands of models in one process: creates, /metrics scrape time and the predict stall.

For each store (the embedded one in a temporary directory; a ``redis-server`` of its own
on a spare port), starts a real ``banditree serve``, creates ``--models`` small models
from 16 concurrent clients (counting the answers: every one must be 201, a 503 on a
healthy store is the bug this guards against), scrapes ``/metrics`` at once (the first
scrape: nothing rendered it on demand before), lets it idle, then scrapes ``--scrapes``
times while another client predicts back to back.  Prints, against the goals: every
scrape's time, the first included (< 0.5 s), the largest predict stall, scraped or not
(a prediction's time less the median of a quiet period measured in the same run;
<= 50 ms), and each of the two apart, the creates
that did not answer 201 (0) and the create rate; and, as baselines measured in the same
run, the time ``prometheus_client.generate_latest`` takes to render the same series in
one piece (what a first scrape used to wait for) and the service's renderer's time.
Give the load (``uptime``) beside the figures.  With ``--library gc`` each store is run
again, in the same run, by a server with ``BANDITREE_LIBRARY_PATHS=gc`` (CPython's
collector as it comes: no new model's objects frozen), and the two stalls are
printed side by side (docs/decisions/0007).

    python -m benchmarks.scale.metrics_scale [--models 10000] [--scrapes 10] [--store both]
        [--library gc]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gzip
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

from benchmarks.scale import sqlite_locks, stall_probe
from benchmarks.scale.tombstone_memory import free_port, start_redis
from service.telemetry.metrics import ServiceMetrics
from service.telemetry.metrics_render import ExpositionRenderer, registry_metrics

ROOT = Path(__file__).resolve().parents[2]
MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}
CONTEXT = {"context": [0.1, 0.2, 0.3, 0.4]}
SCRAPE_GOAL_SECONDS, STALL_GOAL_MS = 0.5, 50.0


def start_server(
    port: int, env: dict[str, str], models: int, probe: Path | None = None
) -> subprocess.Popen[bytes]:
    """``banditree serve``, under :mod:`benchmarks.scale.stall_probe` writing to ``probe`` if given."""
    env = {
        **os.environ, **env, "PYTHONPATH": str(ROOT), "BANDITREE_PORT": str(port),
        "BANDITREE_MAX_MODELS": str(models + 10), "BANDITREE_LOG_LEVEL": "warning",
        "BANDITREE_METRICS_MAX_MODELS": str(models + 10),  # every model's own series
    }  # fmt: skip
    command = ["-m", "banditree", "serve"]
    if probe is not None:
        command = ["-m", "benchmarks.scale.stall_probe", str(probe)]
    process = subprocess.Popen([sys.executable, *command], env=env)
    for _ in range(1200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


async def create_models(url: str, count: int) -> collections.Counter[int]:
    """Create ``count`` models from 16 concurrent clients: how many got each status."""
    statuses: collections.Counter[int] = collections.Counter()
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        slots = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with slots:
                statuses[(await http.put(f"/v1/models/m{i}", json=MODEL)).status_code] += 1

        await asyncio.gather(*(create(i) for i in range(count)))
    return statuses


#: every timed prediction's start (``time.monotonic``, the clock the probe writes) and time
PREDICTIONS: list[tuple[float, float]] = []


def predict_latencies(url: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        while not stop.is_set():
            started, at = time.perf_counter(), time.monotonic()
            http.post("/v1/models/m0/predict", json=CONTEXT).raise_for_status()
            out.append(time.perf_counter() - started)
            PREDICTIONS.append((at, out[-1]))


def timed_predictions(url: str, seconds: float, during: threading.Thread | None) -> list[float]:
    """Predict back to back for ``seconds`` (or while ``during`` runs): the latencies."""
    out: list[float] = []
    stop = threading.Event()
    worker = threading.Thread(target=predict_latencies, args=(url, stop, out))
    worker.start()
    if during is None:
        time.sleep(seconds)
    else:
        during.start()
        during.join()
    stop.set()
    worker.join()
    return out


def scrape_once(http: httpx.Client) -> tuple[float, bytes, str | None]:
    """One scrape as Prometheus makes it (``Accept-Encoding: gzip``): seconds until its last
    byte arrived, the answer as it came and its encoding (see :func:`exposition_size`)."""
    started = time.perf_counter()
    with http.stream("GET", "/metrics", headers={"accept-encoding": "gzip"}) as answer:
        raw = b"".join(answer.iter_raw())
        seconds = time.perf_counter() - started
        encoding = answer.headers.get("content-encoding")
    return seconds, raw, encoding


def exposition_size(raw: bytes, encoding: str | None) -> int:
    """The size of a scraped exposition, decompressed.  Not while predictions are timed:
    Prometheus decompresses on its side, and here the predicting thread shares this
    process's interpreter, which ``gzip.decompress`` holds for tens of ms (the copy of its
    60 MB result), a stall of this client's, not of the service's."""
    return len(gzip.decompress(raw) if encoding == "gzip" else raw)


def scrape_times(
    url: str, scrapes: int, out: list[float], answers: list[tuple[bytes, str | None]]
) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        for _ in range(scrapes):
            seconds, raw, encoding = scrape_once(http)
            out.append(seconds)
            answers.append((raw, encoding))
            time.sleep(0.3)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def baseline_render_seconds(models: int) -> tuple[float, tuple[float, float]]:
    """``generate_latest`` on the same series in one piece (what a first scrape waited
    for), and the service's renderer's first and second rendering."""
    metrics = ServiceMetrics(max_model_series=models)
    for i in range(models):
        metrics.for_model(f"m{i}")
    started = time.perf_counter()
    generate_latest(metrics.registry)
    baseline = time.perf_counter() - started
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    times = []
    for _ in range(2):
        started = time.perf_counter()
        renderer.render()
        times.append(time.perf_counter() - started)
    return baseline, (times[0], times[1])


def run_store(
    store: str, models: int, scrapes: int, probe: Path | None = None, library: str = ""
) -> float:
    """One store's run (``library``: ``BANDITREE_LIBRARY_PATHS``): its largest stall, ms."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        redis = start_redis(free_port()) if store == "redis" else None
        env = {"BANDITREE_DATA_DIR": tmp, "BANDITREE_LIBRARY_PATHS": library}
        if redis is not None:
            env["BANDITREE_REDIS_URL"] = f"redis://127.0.0.1:{redis.args[2]}/0"
        server = start_server(port, env, models, probe)
        try:
            started = time.perf_counter()
            statuses = asyncio.run(create_models(url, models))
            create_seconds = time.perf_counter() - started
            with httpx.Client(base_url=url, timeout=60) as http:
                first_scrape, raw, encoding = scrape_once(http)
            first_size = exposition_size(raw, encoding)
            time.sleep(5)  # idle: every learner waits for work
            quiet = timed_predictions(url, 3, None)
            scrapes_s: list[float] = []
            answers: list[tuple[bytes, str | None]] = []
            scraper = threading.Thread(target=scrape_times, args=(url, scrapes, scrapes_s, answers))
            busy = timed_predictions(url, 0, scraper)
        finally:
            server.terminate()
            server.wait(timeout=60)
            if redis is not None:
                redis.terminate()
                redis.wait(timeout=10)
    refused = models - statuses[201]
    sizes = [exposition_size(*answer) for answer in answers[-1:]]
    quiet_median = statistics.median(quiet)
    busy_stall_ms = 1e3 * (max(busy) - quiet_median)
    quiet_stall_ms = 1e3 * (max(quiet) - quiet_median)
    stall_ms = max(busy_stall_ms, quiet_stall_ms)
    scrape = statistics.median(scrapes_s)
    paths = f"; library paths: {library}" if library else ""
    print(f"== store: {store}{paths}; models: {models}; exposition {sizes[-1] / 1e6:.1f} MB")
    print(
        f"creates: {dict(statuses)} in {create_seconds:.1f} s "
        f"({models / create_seconds:.0f} models/s); not 201: {refused} (goal 0)"
    )
    print(
        f"first scrape, right after the creates: {first_scrape:.3f} s "
        f"({first_size / 1e6:.1f} MB; goal < {SCRAPE_GOAL_SECONDS})"
    )
    print(
        f"scrape seconds: median {scrape:.3f}, max {max(scrapes_s):.3f} "
        f"(goal < {SCRAPE_GOAL_SECONDS}; max / goal {max(scrapes_s) / SCRAPE_GOAL_SECONDS:.2f})"
    )
    print(
        f"largest predict stall, scraped or not: {stall_ms:.1f} ms "
        f"(goal <= {STALL_GOAL_MS:.0f}; stall / goal {stall_ms / STALL_GOAL_MS:.2f})"
    )
    every = max([first_scrape, *scrapes_s])
    verdict = "met" if every < SCRAPE_GOAL_SECONDS and stall_ms <= STALL_GOAL_MS else "NOT met"
    print(
        f"goal (every scrape < {SCRAPE_GOAL_SECONDS} s, stall <= {STALL_GOAL_MS:.0f} ms): {verdict}"
    )
    print(
        f"predict ms quiet: median {1e3 * quiet_median:.2f}, "
        f"max {1e3 * max(quiet):.2f} ({len(quiet)} calls)"
    )
    print(
        f"predict ms while scraping: median {1e3 * statistics.median(busy):.2f}, "
        f"max {1e3 * max(busy):.2f} ({len(busy)} calls)"
    )
    p99_ms = 1e3 * (quantile(busy, 0.99) - quiet_median)
    print(
        f"largest stall while scraping {busy_stall_ms:.1f} ms, without scraping "
        f"{quiet_stall_ms:.1f} ms; 99th percentile stall while scraping {p99_ms:.1f} ms"
    )
    print(f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    baseline, ours = baseline_render_seconds(models)
    print(f"baseline, generate_latest in one piece: {baseline:.3f} s")
    print(
        f"the service's renderer, first and again (idle models): {ours[0]:.3f} s, {ours[1]:.3f} s"
    )
    print(f"scrape / baseline: {scrape / baseline:.3f}", flush=True)
    if probe is not None:
        stall_probe.report(probe, PREDICTIONS, quiet_median, STALL_GOAL_MS)
        sqlite_locks.report(probe.with_suffix(".locks.jsonl"), PREDICTIONS[0][0])
    return stall_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--scrapes", type=int, default=10)
    parser.add_argument("--store", choices=["sqlite", "redis", "both"], default="both")
    parser.add_argument(
        "--probe",
        type=Path,
        help="record the service's loop stalls here (benchmarks.scale.stall_probe)",
    )
    parser.add_argument(
        "--library", choices=["gc"], default=None,
        help="run each store again with this hand-built part on its library's path",
    )  # fmt: skip
    args = parser.parse_args()
    for store in ("sqlite", "redis") if args.store == "both" else (args.store,):
        stalls = {}
        for library in ("", *([args.library] if args.library else [])):
            PREDICTIONS.clear()
            probe = args.probe.with_suffix(f".{store}{library}.jsonl") if args.probe else None
            stalls[library] = run_store(store, args.models, args.scrapes, probe, library)
        if args.library:
            ours, theirs = stalls[""], stalls[args.library]
            print(
                f"[{store}] largest predict stall: {ours:.1f} ms, with {args.library} on the "
                f"library's path {theirs:.1f} ms (library / ours {theirs / ours:.2f})"
            )


if __name__ == "__main__":
    main()
