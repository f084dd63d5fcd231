"""Staleness at a given feedback rate that the load generator really reaches.

One command::

    python -m benchmarks.staleness_load [--rate 1000] [--seconds 20] [--connections 16] [--split]

``banditree serve`` (Redis store, one process with every role: its served model is
swapped in from the published checkpoints as a replica's is; with ``--split`` an API
process and a learner process, the staleness that of the API process) and ``wrk`` sending
predict + feedback pairs over ``--connections`` connections, each pausing between its
requests; the pause is calibrated in a short run first so that the feedback rate
reaches ``--rate``.  Printed: the feedback rate reached (wrk's, and the service's own
count of feedbacks answered ``applied`` over the measured run) and the
p50 / p99 of ``banditree_model_staleness_seconds`` over the measured run only (each
swap of the served snapshot observes the time since the oldest feedback it newly
includes was acknowledged; linear inside a histogram bucket).  Goal (issue 28): p99
< 1 s at 1,000 feedbacks/s.  Needs ``wrk`` and Redis on 127.0.0.1:6379 (keys under a
unique prefix, deleted afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx

from benchmarks._http_load import MODEL, run_wrk
from benchmarks.scale_out import bucket_quantile, serve, stop

CONTEXT = [0.05 * i for i in range(16)]
_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$", re.M)


def scrape(port: int) -> tuple[list[tuple[float, float]], float]:
    """The staleness histogram's cumulative buckets and the feedbacks applied so far, of
    model ``m`` (labels in any order)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    buckets, applied = [], 0.0
    for name, labels, value in _SAMPLE.findall(text):
        label = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if label.get("model") != "m":
            continue
        if name == "banditree_model_staleness_seconds_bucket":
            buckets.append((float(label["le"]), float(value)))
        elif name == "banditree_feedback_total" and label.get("outcome") == "applied":
            applied = float(value)
    return buckets, applied


def quantile(
    before: list[tuple[float, float]], after: list[tuple[float, float]], q: float
) -> float:
    """The ``q`` quantile of the observations between two scrapes (linear in a bucket)."""
    counts = [(le, n - dict(before).get(le, 0.0)) for le, n in after]
    return bucket_quantile(counts, q)


#: predict + feedback pairs: each predict's event id is queued (per wrk thread), and a
#: connection sends the oldest queued feedback before a new predict, so every decision
#: gets its feedback, whatever the number of connections
PAIRS_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local predict_body = '%s'
local queue, head, tail = {}, 1, 0
request = function()
  if head <= tail then
    local body = queue[head]
    queue[head] = nil
    head = head + 1
    return wrk.format("POST", "/v1/models/m/feedback", nil, body)
  end
  return wrk.format("POST", "/v1/models/m/predict", nil, predict_body)
end
response = function(status, headers, body)
  if string.find(body, '"action"', 1, true) then
    local event = string.match(body, '"event_id":"(%%x+)"')
    if event then
      local loss = (string.match(body, '"action":(%%d+)') == "3") and 0 or 1
      tail = tail + 1
      queue[tail] = '{"event_id":"' .. event .. '","loss":' .. loss .. '}'
    end
  end
end
delay = function()
  return %f
end
"""


def pairs_script(tmp: Path, rate: float, connections: int) -> Path:
    """The wrk script: a pause per request meant for ``rate`` pairs a second in all."""
    script = tmp / "pairs.lua"
    pause_ms = 1000.0 * connections / (2.0 * rate)
    script.write_text(PAIRS_LUA % (json.dumps({"context": CONTEXT}), pause_ms))
    return script


async def offer(port: int, tmp: Path, rate: float, seconds: int, connections: int) -> float:
    """Run wrk at a per-connection pause meant for ``rate`` feedbacks/s: the feedback rate
    reached (half of wrk's requests: each connection alternates predict and feedback, and
    wrk fails on any answer but 2xx)."""
    script = pairs_script(tmp, rate, connections)
    figures = await run_wrk(f"http://127.0.0.1:{port}", script, seconds, connections)
    reached = figures["requests_per_second"] / 2.0
    print(f"offered for {rate:,.0f}/s over {seconds} s: reached {reached:,.0f}/s", flush=True)
    return reached


def start(args: argparse.Namespace, prefix: str, port: int) -> list[subprocess.Popen[bytes]]:
    """The service: one process with every role, or (``--split``) an API process on
    ``port`` and a learner process of its own."""
    if not args.split:
        return [serve(1, prefix, port)]
    with _role("learner"):
        learner = serve(1, prefix, _free_port())
    with _role("api"):
        return [learner, serve(1, prefix, port)]


@contextlib.contextmanager
def _role(role: str) -> Iterator[None]:
    before = os.environ.get("BANDITREE_ROLE")
    os.environ["BANDITREE_ROLE"] = role
    try:
        yield
    finally:
        if before is None:
            del os.environ["BANDITREE_ROLE"]
        else:
            os.environ["BANDITREE_ROLE"] = before


async def run(args: argparse.Namespace) -> dict[str, float]:
    prefix, port = f"banditree-bench:{uuid.uuid4().hex}:", _free_port()
    processes = start(args, prefix, port)
    try:
        httpx.put(f"http://127.0.0.1:{port}/v1/models/m", json=MODEL).raise_for_status()
        with tempfile.TemporaryDirectory() as tmp:
            await offer(port, Path(tmp), args.rate, 3, args.connections)  # warm-up
            # calibration: the rate asked of wrk's pauses is scaled by how far the rate
            # reached fell short of (or went past) the goal, a few short runs
            asked = args.rate
            for _ in range(3):
                reached = await offer(port, Path(tmp), asked, 3, args.connections)
                if reached <= 0 or abs(reached - args.rate) < 0.03 * args.rate:
                    break
                asked *= min(max(args.rate / reached, 0.5), 3.0)
            await asyncio.sleep(2.0)
            before, applied_before = scrape(port)
            reached = await offer(port, Path(tmp), asked, args.seconds, args.connections)
            await asyncio.sleep(3.0)  # the last snapshot swapped in, /metrics rendered anew
            after, applied_after = scrape(port)
    finally:
        for process in reversed(processes):
            stop(process)
        from tests.service.conftest import delete_prefix

        delete_prefix(prefix)
    return {
        "target_feedbacks_per_second": args.rate,
        "reached_feedbacks_per_second": reached,
        "applied_per_second_server": (applied_after - applied_before) / args.seconds,
        "swaps_observed": (after[-1][1] - dict(before).get(float("inf"), 0.0)) if after else 0.0,
        "staleness_p50_seconds": quantile(before, after, 0.5),
        "staleness_p99_seconds": quantile(before, after, 0.99),
    }


def _free_port() -> int:
    from tests.service.live_server import free_port

    return free_port()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="feedbacks per second")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--split", action="store_true", help="an API process and a learner process of its own"
    )
    args = parser.parse_args()
    figures = asyncio.run(run(args))
    for key, value in figures.items():
        print(f"{key:32s} {value:,.3f}")
    reached = figures["reached_feedbacks_per_second"] >= 0.95 * args.rate
    met = reached and figures["staleness_p99_seconds"] < 1.0
    print(
        f"load reached {args.rate:,.0f}/s: {'yes' if reached else 'NO'}; "
        f"goal p99 < 1 s: {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
