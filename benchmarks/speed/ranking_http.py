"""Speed of ranking: HTTP rank against a single-context predict, and the learner alone.

One command::

    python -m benchmarks.speed.ranking_http [--seconds 5] [--rounds 3] [--connections 8] [--out FILE]

Needs ``wrk``.  Starts one uvicorn worker of the service (embedded store) serving a
classification model (the HTTP benchmarks' d=16, K=10 DGT) and a ranking model
(``{"task": "ranking"}``, its schemas inferred from a few hundred learned events:
a context of 3 features, candidates of 3 features, Personalizer-style JSON); then,
interleaved round by round:

* ``predict``: one context per request (the classification model);
* ``rank_10``: 10 candidates per request; ``rank_256``: 256 candidates per request;
* ``raw``: the ASGI ceiling of ``benchmarks.speed.service_http`` (a bare ASGI app on its own
  uvicorn worker that reads the predict body, ``orjson.loads`` it and answers a constant).

wrk sends one body over and over, so these candidates recur as a catalogue's items do:
the served model encodes each candidate's features once per snapshot.  The learner-alone
figures below draw fresh candidate features for every rank (nothing recurs).

And in-process, the learner alone (no HTTP): ranks of 10 candidates and learns of
10-candidate decisions (the learner's feedback throughput), per second of wall clock and
per CPU-second of the process (the figure a busy machine does not distort), and the p99
of a 256-candidate rank.

Goals (issue 26): rank_10 >= 0.7x predict's req/s; rank_256 p99 <= 5 ms on one worker;
>= 2,000 learns of 10-candidate decisions per second.  Issue 29: rank_10 >= 0.35x raw.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.speed._http_load import MODEL, run_wrk, start_server, wrk_script

PORT = 18091
RAW_PORT = 18092
CONTEXT = [float(v) for v in np.linspace(-1.0, 1.0, 16)]


def _request(rng: random.Random, n: int) -> dict[str, Any]:
    """A Personalizer-style rank body: a context and ``n`` candidates, 3 features each."""
    return {
        "context": [
            {"user": {"country": rng.choice("abcdef"), "age": round(rng.random(), 3)}},
            {"time": rng.choice(["am", "pm"])},
        ],
        "actions": [
            {
                "id": f"item{j}",
                "features": {
                    "genre": rng.choice("wxyz"),
                    "price": round(rng.random(), 3),
                    "new": rng.random() < 0.5,
                },
            }
            for j in range(n)
        ],
    }


def learner_figures(repeats: int = 2000) -> dict[str, float]:
    """The ranking learner alone: ranks and learns per second, the 256-candidate p99."""
    import banditree.ranking  # noqa: F401  (registers the ranking task)
    from banditree.core import Feedback
    from banditree.learners import build_learner

    rng = random.Random(0)
    model = build_learner({"task": "ranking"})

    def parts(n: int) -> tuple[Any, list[tuple[str, Any]]]:
        body = _request(rng, n)
        return body["context"], [(a["id"], a["features"]) for a in body["actions"]]

    for t in range(300):  # the schemas are inferred, the model is past its first rounds
        d = model.rank(*parts(10), event_id=f"w{t}")  # type: ignore[attr-defined]
        model.learn(d, Feedback(loss=float(rng.random() < 0.5)))
    requests = [parts(10) for _ in range(repeats)]
    started, cpu = time.perf_counter(), time.process_time()
    decisions = [model.rank(c, a, event_id=f"e{i}") for i, (c, a) in enumerate(requests)]  # type: ignore[attr-defined]
    rank_seconds, rank_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    for d in decisions:
        model.learn(d, Feedback(loss=0.0))
    learn_seconds, learn_cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies = []
    for i in range(300):
        c, a = parts(256)
        started = time.perf_counter()
        model.rank(c, a, event_id=f"b{i}")  # type: ignore[attr-defined]
        latencies.append(time.perf_counter() - started)
    return {
        "rank_10_per_second": repeats / rank_seconds,
        "rank_10_per_cpu_second": repeats / rank_cpu,
        "learn_10_per_second": repeats / learn_seconds,
        "learn_10_per_cpu_second": repeats / learn_cpu,
        "rank_256_p50_ms": float(np.percentile(latencies, 50) * 1e3),
        "rank_256_p99_ms": float(np.percentile(latencies, 99) * 1e3),
    }


async def http_figures(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    env = {"BANDITREE_DATA_DIR": str(work / "data"), "BANDITREE_LOG_LEVEL": "warning"}
    server = start_server("service.main:create_app_from_env", env, PORT)
    raw = start_server("benchmarks.speed._http_load:raw_app", {}, RAW_PORT)
    base = f"http://127.0.0.1:{PORT}/v1/models"
    rng = random.Random(1)
    try:
        httpx.put(f"{base}/bench", json=MODEL).raise_for_status()
        httpx.put(f"{base}/rank", json={"task": "ranking"}).raise_for_status()
        with httpx.Client() as http:  # a few hundred learned events: the schemas exist
            for _ in range(300):
                answer = http.post(f"{base}/rank/rank", json=_request(rng, 10)).json()
                http.post(
                    f"{base}/rank/feedback",
                    json={"event_id": answer["event_id"], "reward": float(rng.random() < 0.5)},
                ).raise_for_status()
            for _ in range(100):
                if http.get(f"{base}/rank").json()["version"] >= 300:
                    break
                await asyncio.sleep(0.1)
        scripts = {
            "predict": (f"{base}/bench/predict", wrk_script(work, {"context": CONTEXT})),
            "rank_10": (f"{base}/rank/rank", wrk_script(work, _request(rng, 10), "rank10")),
            "rank_256": (f"{base}/rank/rank", wrk_script(work, _request(rng, 256), "rank256")),
            "raw": (
                f"http://127.0.0.1:{RAW_PORT}/v1/models/bench/predict",
                wrk_script(work, {"context": CONTEXT}, "raw"),
            ),
        }
        pids = {row: raw.pid if row == "raw" else server.pid for row in scripts}
        for url, script in scripts.values():  # warm-up
            await run_wrk(url, script, 1, args.connections)
        runs: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for row, (url, script) in scripts.items():
                figures = await run_wrk(url, script, args.seconds, args.connections, pids[row])
                runs.setdefault(row, []).append(figures)
        p99_one = await run_wrk(*scripts["rank_256"], args.seconds, 1, server.pid)
    finally:
        for process in (server, raw):
            process.terminate()
            process.wait(timeout=30)
    result: dict[str, Any] = {
        row: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for row, rs in runs.items()
    }
    result["rank_256_one_connection"] = p99_one
    result["ratios"] = {
        "rank_10_vs_predict": result["rank_10"]["requests_per_second"]
        / result["predict"]["requests_per_second"],
        "rank_10_vs_predict_per_cpu": result["rank_10"]["requests_per_cpu_second"]
        / result["predict"]["requests_per_cpu_second"],
        "rank_10_vs_raw": result["rank_10"]["requests_per_second"]
        / result["raw"]["requests_per_second"],
        "rank_10_vs_raw_per_cpu": result["rank_10"]["requests_per_cpu_second"]
        / result["raw"]["requests_per_cpu_second"],
    }
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="per wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="medians over interleaved rounds")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian package wrk)")
    figures: dict[str, Any] = {"learner": learner_figures()}
    print("learner alone:", ", ".join(f"{k} {v:,.2f}" for k, v in figures["learner"].items()))
    with tempfile.TemporaryDirectory() as tmp:
        figures["http"] = await http_figures(args, Path(tmp))
    for row, cells in figures["http"].items():
        print(f"{row:26s}", ", ".join(f"{k} {v:,.2f}" for k, v in cells.items()))
    print(
        f"rank_10 / predict {figures['http']['ratios']['rank_10_vs_predict']:.2f} (goal >= 0.70); "
        f"rank_10 / raw {figures['http']['ratios']['rank_10_vs_raw']:.2f} (goal >= 0.35); "
        f"rank_256 p99 on one connection {figures['http']['rank_256_one_connection']['p99_ms']:.2f}"
        f" ms (goal <= 5); learns of 10-candidate decisions "
        f"{figures['learner']['learn_10_per_second']:,.0f}/s, "
        f"{figures['learner']['learn_10_per_cpu_second']:,.0f} per CPU-second (goal >= 2,000)"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
