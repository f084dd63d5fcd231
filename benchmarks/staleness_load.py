"""Staleness at a given feedback rate that the load generator really reaches.

One command::

    python -m benchmarks.staleness_load [--rate 1000] [--seconds 20] [--connections 16]

``banditree serve`` (Redis store, one process with every role: its served model is
swapped in from the published checkpoints as a replica's is) and ``wrk`` sending
predict + feedback pairs over ``--connections`` connections, each pausing between its
requests; the pause is calibrated in a short run first so that the feedback rate
reaches ``--rate``.  Printed: the feedback rate reached (feedbacks the service answered
``applied``, per second of the measured run, read from its ``/metrics``) and the
p50 / p99 of ``banditree_model_staleness_seconds`` over the measured run only (each
swap of the served snapshot observes the time since the oldest feedback it newly
includes was acknowledged; linear inside a histogram bucket).  Goal (issue 28): p99
< 1 s at 1,000 feedbacks/s.  Needs ``wrk`` and Redis on 127.0.0.1:6379 (keys under a
unique prefix, deleted afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from benchmarks._http_load import MODEL, feedback_script, run_wrk
from benchmarks.scale_out import serve, stop

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
    total = counts[-1][1] if counts else 0.0
    if total == 0:
        return float("nan")
    previous_le, previous_n = 0.0, 0.0
    for le, n in counts:
        if n >= q * total:
            if le == float("inf"):
                return previous_le
            share = (q * total - previous_n) / max(n - previous_n, 1e-9)
            return previous_le + share * (le - previous_le)
        previous_le, previous_n = le, n
    return previous_le


async def offer(port: int, tmp: Path, rate: float, seconds: int, connections: int) -> float:
    """Run wrk at a per-connection pause meant for ``rate`` feedbacks/s: the rate reached."""
    script = feedback_script(tmp, rate / connections, CONTEXT, model="m")
    _, applied_before = scrape(port)
    started = time.monotonic()
    await run_wrk(f"http://127.0.0.1:{port}", script, seconds, connections)
    elapsed = time.monotonic() - started
    _, applied_after = scrape(port)
    reached = (applied_after - applied_before) / elapsed
    print(f"offered for {rate:,.0f}/s over {seconds} s: reached {reached:,.0f}/s", flush=True)
    return reached


async def run(args: argparse.Namespace) -> dict[str, float]:
    prefix, port = f"banditree-bench:{uuid.uuid4().hex}:", _free_port()
    process = serve(1, prefix, port)
    try:
        httpx.put(f"http://127.0.0.1:{port}/v1/models/m", json=MODEL).raise_for_status()
        with tempfile.TemporaryDirectory() as tmp:
            # calibration: a cycle is the pause plus the request's own time, so aim the
            # pause of the measured run at what the short run showed
            asked = args.rate
            reached = await offer(port, Path(tmp), asked, 3, args.connections)
            for _ in range(2):
                if reached <= 0 or abs(reached - args.rate) < 0.03 * args.rate:
                    break
                # a pair is two requests, each the pause (C / (2 x asked) s) plus its own time
                half = args.connections / 2.0
                own = half * (1.0 / reached - 1.0 / asked)
                pause = max(half / args.rate - own, 1e-4)
                asked = half / pause
                reached = await offer(port, Path(tmp), asked, 3, args.connections)
            await asyncio.sleep(1.0)
            before, _ = scrape(port)
            reached = await offer(port, Path(tmp), asked, args.seconds, args.connections)
            await asyncio.sleep(2.0)  # the last feedbacks' snapshot is swapped in
            after, _ = scrape(port)
    finally:
        stop(process)
        from tests.service.conftest import delete_prefix

        delete_prefix(prefix)
    return {
        "target_feedbacks_per_second": args.rate,
        "reached_feedbacks_per_second": reached,
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
