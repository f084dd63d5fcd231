"""Helpers of the HTTP benchmarks: baseline apps, uvicorn servers, ``wrk`` scripts, CPU time."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from service.domain.schemas import PredictCreate

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

ROOT = Path(__file__).resolve().parents[1]
#: the served DGT model of the benchmarks (d=16, K=10, default height 6)
MODEL = {"kind": "dgt", "n_features": 16, "n_actions": 10, "learning_rate": 1e-2}


def raw_app() -> ASGIApp:
    """The ASGI ceiling: read the body, ``orjson.loads`` it, answer a constant decision."""
    answer = orjson.dumps(
        {"event_id": "0" * 24, "model_version": 0, "leaf": 0, "action": 0,
         "probability": 1.0, "greedy_action": 0}
    )  # fmt: skip
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        orjson.loads(body or b"null")
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app


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


def start_server(
    target: str, env: dict[str, str], port: int, workers: int = 1
) -> subprocess.Popen[bytes]:
    """``uvicorn --factory target`` on ``port`` (uvloop and httptools when installed)."""
    command = [
        sys.executable, "-m", "uvicorn", target, "--factory", "--host", "127.0.0.1",
        "--port", str(port), "--workers", str(workers), "--log-level", "warning",
        "--no-access-log",
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


def wrk_script(path: Path, body_data: dict[str, Any], name: str = "predict") -> Path:
    """A wrk script posting ``body_data`` as JSON."""
    script = path / f"{name}.lua"
    body = json.dumps(body_data)
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
    return wrk.format("POST", "/v1/models/%s/feedback", nil, body)
  end
  return wrk.format("POST", "/v1/models/%s/predict", nil, predict_body)
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


def feedback_script(
    path: Path,
    rate_per_second: float,
    context: list[float],
    model: str = "bench",
    connections: int = 1,
) -> Path:
    """A wrk script sending predict + feedback pairs over ``connections`` connections, each
    pausing between its requests for ``rate_per_second`` pairs a second in all (less the
    answers' own latency: calibrate against the rate reached)."""
    script = path / f"feedback-{model}.lua"
    body = json.dumps({"context": context})
    delay_ms = 1000.0 * connections / (2.0 * rate_per_second)
    script.write_text(FEEDBACK_LUA % (body, model, model, delay_ms))
    return script
