"""HTTP throughput and latency of ``predict``, against a bare FastAPI endpoint, plus checkpoints.

One command::

    python -m benchmarks.service_http [--seconds 5] [--rounds 3] [--connections 8] [--feedback-rate 200]

Needs ``wrk`` (Debian package ``wrk``) and, for the Redis figures, Redis on 127.0.0.1:6379.
For each store (embedded, Redis) it starts one uvicorn worker of the service and one of a
bare FastAPI app whose endpoint parses the same body (the same ``PredictCreate`` schema)
and answers a constant decision, and runs in the same session:

1. ``wrk`` on the bare endpoint, 2. ``wrk`` on ``predict``, 3. ``wrk`` on ``predict`` while
a client streams predict + feedback pairs at ``--feedback-rate`` pairs per second.

Targets: predict >= 80% of the bare throughput; p99 with feedback <= 1.5x p99 without.
Then the checkpoint save and restore time of a trained h=10 tree with the Redis store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from service.schemas import PredictCreate

ROOT = Path(__file__).resolve().parents[1]
REDIS_URL = "redis://127.0.0.1:6379/0"
CONTEXT = [float(v) for v in np.linspace(-1.0, 1.0, 16)]
MODEL = {"kind": "dgt", "n_features": 16, "n_actions": 10, "learning_rate": 1e-2}


def bare_app() -> FastAPI:
    """A FastAPI app whose ``predict`` parses the same body and answers a constant decision."""
    app = FastAPI()

    @app.post("/v1/models/{name}/predict")
    async def predict(name: str, body: PredictCreate) -> JSONResponse:
        return JSONResponse(
            {"event_id": "0" * 24, "model_version": 0, "leaf": 0, "action": 0,
             "probability": 1.0, "greedy_action": 0}
        )  # fmt: skip

    return app


def bare_act_app() -> FastAPI:
    """The bare endpoint plus the learner's ``act`` (same model): isolates the service's own cost."""
    from banditree.learners import build_learner

    learner = build_learner(MODEL)
    app = FastAPI()

    @app.post("/v1/models/{name}/predict")
    async def predict(name: str, body: PredictCreate) -> JSONResponse:
        d = learner.act(body.context or [])
        return JSONResponse(
            {"event_id": d.event_id, "model_version": d.model_version, "leaf": d.leaf,
             "action": d.action, "probability": d.propensity, "greedy_action": d.greedy_action}
        )  # fmt: skip

    return app


def start_server(target: str, env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "uvicorn", target, "--factory", "--host", "127.0.0.1",
        "--port", str(port), "--workers", "1", "--log-level", "warning", "--no-access-log",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, cwd=ROOT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/docs", timeout=1.0)
            return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{target} did not start")


def wrk_script(path: Path) -> Path:
    script = path / "predict.lua"
    body = json.dumps({"context": CONTEXT})
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = '{body}'\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    return script


def _to_ms(text: str) -> float:
    found = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if found is None:
        raise ValueError(f"unreadable wrk latency {text!r}")
    value, unit = found.groups()
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_wrk(
    url: str, script: Path, seconds: int, connections: int, server_pid: int | None = None
) -> dict[str, float]:
    """wrk figures; with ``server_pid`` also requests per CPU-second of the server process."""
    cpu_before = cpu_seconds(server_pid) if server_pid else 0.0
    process = await asyncio.create_subprocess_exec(
        "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out = (await process.communicate())[0].decode()
    if "Requests/sec" not in out or "Non-2xx" in out:
        raise RuntimeError(f"wrk failed:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    figures = {"requests_per_second": rps, "p50_ms": p50, "p99_ms": p99}
    if server_pid:
        total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
        figures["requests_per_cpu_second"] = total / max(cpu_seconds(server_pid) - cpu_before, 1e-9)
    return figures


FEEDBACK_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local predict_body = '%s'
local event = nil
local loss = 1
request = function()
  if event then
    local body = '{"event_id":"' .. event .. '","loss":' .. loss .. '}'
    event = nil
    return wrk.format("POST", "/v1/models/bench/feedback", nil, body)
  end
  return wrk.format("POST", "/v1/models/bench/predict", nil, predict_body)
end
response = function(status, headers, body)
  if string.find(body, '"action"', 1, true) then
    event = string.match(body, '"event_id":"(%%x+)"')
    loss = (string.match(body, '"action":(%%d+)') == "3") and 0 or 1
  end
end
delay = function()
  return %f
end
"""


def feedback_script(path: Path, rate_per_second: float) -> Path:
    """A wrk script sending predict + feedback pairs, about ``rate_per_second`` pairs a second."""
    script = path / "feedback.lua"
    body = json.dumps({"context": CONTEXT})
    script.write_text(FEEDBACK_LUA % (body, 1000.0 / (2.0 * rate_per_second)))
    return script


async def http_figures(store: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    env = {"BANDITREE_DATA_DIR": str(work / f"data-{store}"), "BANDITREE_LOG_LEVEL": "warning"}
    prefix = f"banditree-bench:{uuid.uuid4().hex}:"
    if store == "redis":
        env.update(BANDITREE_REDIS_URL=REDIS_URL, BANDITREE_REDIS_PREFIX=prefix)
    script = wrk_script(work)
    bare = start_server("benchmarks.service_http:bare_app", {}, 18081)
    bare_act = start_server("benchmarks.service_http:bare_act_app", {}, 18083)
    served = start_server("service.main:create_app_from_env", env, 18082)
    try:
        base = "http://127.0.0.1:18082"
        httpx.put(f"{base}/v1/models/bench", json=MODEL).raise_for_status()
        url = "/v1/models/bench/predict"
        await run_wrk(base + url, script, 2, args.connections)  # warm-up
        runs: dict[str, list[dict[str, float]]] = {
            "bare": [],
            "bare_act": [],
            "predict": [],
            "predict_with_feedback": [],
        }
        feedback_rates = []
        for _ in range(args.rounds):  # interleaved, so a noisy neighbour hits every variant
            runs["bare"].append(
                await run_wrk(
                    f"http://127.0.0.1:18081{url}", script, args.seconds, args.connections, bare.pid
                )
            )
            runs["bare_act"].append(
                await run_wrk(
                    f"http://127.0.0.1:18083{url}",
                    script,
                    args.seconds,
                    args.connections,
                    bare_act.pid,
                )
            )
            runs["predict"].append(
                await run_wrk(base + url, script, args.seconds, args.connections, served.pid)
            )
            stream = asyncio.create_task(
                run_wrk(base + url, feedback_script(work, args.feedback_rate), args.seconds + 2, 2)
            )
            await asyncio.sleep(1.0)
            runs["predict_with_feedback"].append(
                await run_wrk(base + url, script, args.seconds, args.connections)
            )
            feedback_rates.append((await stream)["requests_per_second"] / 2)
        result: dict[str, Any] = {
            name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for name, rs in runs.items()
        }
        result["feedback_per_second"] = statistics.median(feedback_rates)
        result["model_version_after"] = httpx.get(f"{base}/v1/models/bench").json()["version"]
    finally:
        for process in (bare, bare_act, served):
            process.terminate()
            process.wait(timeout=30)
        if store == "redis":
            from tests.service.conftest import delete_prefix

            delete_prefix(prefix)
    result["throughput_ratio"] = (
        result["predict"]["requests_per_second"] / result["bare"]["requests_per_second"]
    )
    result["cpu_throughput_ratio"] = (
        result["predict"]["requests_per_cpu_second"] / result["bare"]["requests_per_cpu_second"]
    )
    result["cpu_throughput_ratio_vs_bare_act"] = (
        result["predict"]["requests_per_cpu_second"] / result["bare_act"]["requests_per_cpu_second"]
    )
    result["p99_ratio_with_feedback"] = (
        result["predict_with_feedback"]["p99_ms"] / result["predict"]["p99_ms"]
    )
    return result


async def checkpoint_figures(repeats: int) -> dict[str, float]:
    """Save and restore times of a trained h=10 DGT with the Redis store (median, seconds)."""
    from banditree.datasets import load
    from banditree.learners import Feedback, build_learner
    from banditree.persistence import dumps, loads
    from service.store import RedisStore

    ds = load("pendigits")
    learner = build_learner(
        {"kind": "dgt", "height": 10, "n_features": ds.n_features, "n_actions": ds.n_classes}
    )
    for i in range(200):
        decision = learner.act(ds.X_train[i])
        learner.learn(decision, Feedback(loss=float(decision.action != ds.y_train[i])))
    prefix = f"banditree-bench:{uuid.uuid4().hex}:"
    store = RedisStore.from_url(REDIS_URL, prefix=prefix)
    saves, restores = [], []
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            info = await store.save_checkpoint(
                "h10",
                version=learner.version,
                blob=dumps(learner),
                keep=5,
                now=time.time(),
                offset=0,
                acked_at=0.0,
                token=-1,
            )
            saves.append(time.perf_counter() - started)
            started = time.perf_counter()
            restored = loads(await store.load_checkpoint("h10", info.sequence) or b"")
            restores.append(time.perf_counter() - started)
            assert restored.version == learner.version
    finally:
        await store.close()
        from tests.service.conftest import delete_prefix

        delete_prefix(prefix)
    return {
        "size_bytes": float(info.size_bytes),
        "save_seconds_median": statistics.median(saves),
        "restore_seconds_median": statistics.median(restores),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="medians over interleaved rounds")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--feedback-rate", type=float, default=200.0, help="pairs per second")
    parser.add_argument("--stores", default="embedded,redis")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian package wrk)")
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores.split(","):
            figures[store] = await http_figures(store, args, Path(tmp))
            f = figures[store]
            print(f"[{store}] bare {f['bare']}")
            print(f"[{store}] bare + learner.act {f['bare_act']}")
            print(f"[{store}] predict {f['predict']}")
            print(
                f"[{store}] predict + {f['feedback_per_second']:.0f} feedback/s {f['predict_with_feedback']}"
            )
            print(
                f"[{store}] throughput ratio {f['throughput_ratio']:.2f} wall-clock, "
                f"{f['cpu_throughput_ratio']:.2f} per server CPU-second (target >= 0.80), "
                f"{f['cpu_throughput_ratio_vs_bare_act']:.2f} against bare + act; "
                f"p99 ratio with feedback {f['p99_ratio_with_feedback']:.2f} (target <= 1.50)"
            )
    figures["checkpoint_h10_redis"] = await checkpoint_figures(repeats=20)
    print(f"[redis] h=10 checkpoint {figures['checkpoint_h10_redis']}")
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
