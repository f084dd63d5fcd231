"""Answer times with the service's Redis frozen (SIGSTOP): every call within 1 s.

One command::

    python -m benchmarks.frozen_redis [--clients 8] [--repeats 5]

Starts a ``redis-server`` of its own (no persistence, a spare port) and a service on it
with the default timeouts (``REDIS_TIMEOUT_SECONDS`` 0.25, a store budget of twice
that), creates a model, freezes Redis and times each kind of call: one at a time, then
from ``--clients`` clients at once (they wait on the same pooled connections and on the
lock that loads a model).  Prints the median and the largest answer time per call and
their ratio to the 1 s goal.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchmarks.tombstone_memory import free_port, start_redis

GOAL_SECONDS = 1.0
ADMIN = "bench-admin"
CONTEXT = [0.1, 0.2, 0.3, 0.4]
Call = Callable[[httpx.Client, int], httpx.Response]


def start_service(redis_port: int, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ, "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "BANDITREE_API_KEYS": "", "BANDITREE_ADMIN_KEYS": ADMIN,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }  # fmt: skip
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "service.main:create_app_from_env", "--factory",
             "--port", str(port), "--log-level", "warning"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=1.0).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the service did not start:\n{log_path.read_text()[-2000:]}")


def calls(event_id: str) -> dict[str, Call]:
    feedback = {"event_id": event_id, "loss": 0.5}
    model = {"n_features": 4, "n_actions": 3}
    return {
        "feedback": lambda c, i: c.post("/v1/models/m/feedback", json=feedback),
        "predict": lambda c, i: c.post("/v1/models/m/predict", json={"context": CONTEXT}),
        "GET unloaded model": lambda c, i: c.get(f"/v1/models/unknown-{i}"),
        "PUT model": lambda c, i: c.put(f"/v1/models/new-{i}", json=model),
        "DELETE model": lambda c, i: c.delete("/v1/models/m"),
        "GET checkpoints": lambda c, i: c.get("/v1/models/m/checkpoints"),
        "/readyz": lambda c, i: c.get("/readyz"),
        "/metrics": lambda c, i: c.get("/metrics"),
    }


def timed(url: str, call: Call, i: int) -> tuple[float, int]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30.0) as http:
        started = time.perf_counter()
        status = call(http, i).status_code
        return time.perf_counter() - started, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5, help="calls one at a time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        redis_server = start_redis(free_port())
        redis_port = int(redis_server.args[2])
        service, url = start_service(redis_port, Path(tmp) / "service.log")
        try:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
                http.put("/v1/models/m", json={"n_features": 4, "n_actions": 3})
                event_id = http.post("/v1/models/m/predict", json={"context": CONTEXT}).json()
            redis_server.send_signal(signal.SIGSTOP)
            worst = 0.0
            print(f"{'':18s} {'call':20s} {'median s':>9} {'max s':>7} {'max/goal':>9}  statuses")
            for mode in ("one at a time", f"{args.clients} at once"):
                for name, call in calls(event_id["event_id"]).items():
                    if mode == "one at a time":
                        answers = [timed(url, call, i) for i in range(args.repeats)]
                    else:
                        with ThreadPoolExecutor(args.clients) as pool:
                            answers = list(
                                pool.map(lambda i, c=call: timed(url, c, i), range(args.clients))
                            )
                    seconds = [s for s, _ in answers]
                    worst = max(worst, *seconds)
                    print(
                        f"{mode:18s} {name:20s} {statistics.median(seconds):9.3f} "
                        f"{max(seconds):7.3f} {max(seconds) / GOAL_SECONDS:9.2f}  "
                        f"{sorted({status for _, status in answers})}"
                    )
            print(f"largest answer time / goal ({GOAL_SECONDS} s): {worst / GOAL_SECONDS:.2f}")
        finally:
            redis_server.send_signal(signal.SIGCONT)
            service.kill()
            redis_server.kill()
            service.wait()
            redis_server.wait()


if __name__ == "__main__":
    main()
