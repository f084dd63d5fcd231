"""Ten thousand idle models: a restart's time to ``/healthz``, its memory, ``/metrics``.

One command::

    python -m benchmarks.scale.fleet_start [--models 10000] [--data-dir DIR]

A real ``banditree serve`` (the embedded store in a fresh temporary data directory, a
spare port, an admin key) gets ``--models`` small models (``kind linear``, 4 features,
3 actions) from 16 concurrent clients, then is stopped (SIGTERM) and started again on
the same data directory.  Printed, against the goals of issue 41: the seconds from the
second launch to the first 200 of ``/healthz`` (< 5 s) and of ``/readyz``, the resident
memory of the serving process 5 s later (<= 300 MB) and once every learner holds its
lease (``settled``: the memory it keeps), the status of ``/metrics``
without a key (401 when keys are set) and the size of its page with one, and the time
``GET /v1/models`` takes, the first time and again; and the passes over the idle
learners (``banditree_learner_idle_pass_seconds``): their count, mean and longest
(a bucket bound) from the launch until every learner leads, and in the
:data:`IDLE_WINDOW_SECONDS` from 5 s after that.  ``--data-dir`` keeps the models made there and
reuses them (only the restart is measured then).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.speed.startup import free_port, rss_mb

ROOT = Path(__file__).resolve().parents[2]
MODEL = {"kind": "linear", "n_features": 4, "n_actions": 3}
KEY = "fleet-start-admin-key"
GOALS = {"healthz_seconds": 5.0, "rss_mb": 300.0, "settled_rss_mb": 300.0}
#: seconds the idle learners' passes are watched once every learner leads
IDLE_WINDOW_SECONDS = 10.0


def launch(data_dir: Path, port: int, models: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
    env.update(
        PYTHONPATH=str(ROOT), BANDITREE_PORT=str(port), BANDITREE_DATA_DIR=str(data_dir),
        BANDITREE_MAX_MODELS=str(models + 10), BANDITREE_LOG_LEVEL="warning",
        BANDITREE_ADMIN_KEYS=KEY,
    )  # fmt: skip
    return subprocess.Popen([sys.executable, "-m", "banditree", "serve"], env=env)


def first_200(url: str, path: str, deadline_seconds: float = 600.0) -> float:
    """Poll ``url + path`` until it answers 200: the time it took (``time.monotonic``)."""
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + path, timeout=1.0).status_code == 200:
                return time.monotonic()
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{path} never answered 200")


async def create_models(url: str, count: int) -> collections.Counter[int]:
    statuses: collections.Counter[int] = collections.Counter()
    headers = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as http:
        slots = asyncio.Semaphore(16)

        async def create(i: int) -> None:
            async with slots:
                statuses[(await http.put(f"/v1/models/m{i:05d}", json=MODEL)).status_code] += 1

        await asyncio.gather(*(create(i) for i in range(count)))
    return statuses


def led(url: str) -> int:
    """``banditree_learner_models_led``: the models whose lease this process holds."""
    text = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    for line in text.splitlines():
        if line.startswith("banditree_learner_models_led "):
            return int(float(line.split()[1]))
    return 0


def idle_passes(url: str) -> dict[str, float]:
    """The idle learners' passes so far (``banditree_learner_idle_pass_*``): their count,
    total seconds, count within each bucket bound (``le``), learners in the last one."""
    text = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {KEY}"}).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("banditree_learner_idle_pass_seconds_bucket{"):
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            out[f"le {bound}"] = float(line.split()[-1])
        elif line.startswith("banditree_learner_idle_pass_seconds_count "):
            out["count"] = float(line.split()[-1])
        elif line.startswith("banditree_learner_idle_pass_seconds_sum "):
            out["sum"] = float(line.split()[-1])
        elif line.startswith("banditree_learner_idle_pass_learners "):
            out["learners"] = float(line.split()[-1])
    return out


def pass_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """The passes between two :func:`idle_passes` reads: count, mean and longest (as the
    smallest bucket bound holding every one), learners in the last."""
    count = after.get("count", 0.0) - before.get("count", 0.0)
    bounds = sorted(
        (float(k[3:]), after[k] - before.get(k, 0.0)) for k in after if k.startswith("le ")
    )
    longest = next((bound for bound, n in bounds if n >= count), None)
    return {
        "passes": int(count),
        "mean_ms": round(1000 * (after.get("sum", 0.0) - before.get("sum", 0.0)) / count, 1)
        if count else None,
        "longest_at_most_s": longest,
        "learners_last_pass": int(after.get("learners", 0.0)),
    }  # fmt: skip


def measure(models: int, kept: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir, port = (kept or Path(tmp)) / "data", free_port()
        url = f"http://127.0.0.1:{port}"
        if not (data_dir / "banditree.sqlite3").exists():
            server = launch(data_dir, port, models)
            try:
                first_200(url, "/readyz")
                created = asyncio.run(create_models(url, models))
                if created != {201: models}:
                    raise RuntimeError(f"creates answered {dict(created)}")
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=120)
        started = time.monotonic()
        server = launch(data_dir, port, models)
        try:
            healthz = first_200(url, "/healthz") - started
            readyz = first_200(url, "/readyz") - started
            time.sleep(5.0)
            rss = rss_mb(server.pid)
            bare = httpx.get(url + "/metrics", timeout=60.0).status_code
            headers = {"Authorization": f"Bearer {KEY}"}
            page = httpx.get(url + "/metrics", headers=headers, timeout=60.0)
            deadline = time.monotonic() + 600
            while led(url) < models and time.monotonic() < deadline:
                time.sleep(1.0)
            settled = time.monotonic() - started
            settled_rss = rss_mb(server.pid)
            until_settled = idle_passes(url)
            time.sleep(5.0)  # then every learner has been idle a while
            at_settle = idle_passes(url)
            time.sleep(IDLE_WINDOW_SECONDS)
            idle = {
                "until_settled": pass_figures({}, until_settled),
                "settled": pass_figures(at_settle, idle_passes(url)),
            }
            list_seconds = []
            for _ in range(2):  # the first restores the models not loaded; the second not
                listed = time.monotonic()
                listing = httpx.get(url + "/v1/models", headers=headers, timeout=600.0)
                list_seconds.append(round(time.monotonic() - listed, 2))
                listing.raise_for_status()
                if len(listing.json()["models"]) != models:
                    raise RuntimeError(f"{len(listing.json()['models'])} models listed")
            listed_rss = rss_mb(server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
    return {
        "models": models, "healthz_seconds": round(healthz, 2),
        "readyz_seconds": round(readyz, 2), "rss_mb": round(rss, 1),
        "settled_seconds": round(settled, 1), "settled_rss_mb": round(settled_rss, 1),
        "metrics_status_without_key": bare, "metrics_bytes": len(page.content),
        "list_seconds": list_seconds, "listed_rss_mb": round(listed_rss, 1),
        "idle_passes": idle,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--data-dir", type=Path, help="keep the models here; reuse them")
    args = parser.parse_args(argv)
    figures = measure(args.models, args.data_dir)
    print(json.dumps(figures))
    for name, goal in GOALS.items():
        print(f"{name}: {figures[name]} (goal {'<' if name.endswith('seconds') else '<='} {goal})")
    print(f"metrics without a key: {figures['metrics_status_without_key']} (goal 401)")
    for phase, passes in figures["idle_passes"].items():
        print(f"idle learners' passes, {phase}: {json.dumps(passes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
