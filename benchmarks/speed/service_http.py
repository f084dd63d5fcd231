"""HTTP throughput and latency of ``predict`` against a bare FastAPI endpoint, per model family.

One command::

    python -m benchmarks.speed.service_http [--seconds 5] [--rounds 3] [--connections 8]
        [--feedback-rate 200] [--stores embedded,redis] [--no-two-workers] [--out FILE]
        [--rows raw,bare,predict,batch_256] [--library gc --library redis_wire ...]

Needs ``wrk`` (Debian package ``wrk``) and, for the Redis figures, Redis on 127.0.0.1:6379
(keys under a fresh unique prefix, deleted afterwards).  For each store it starts one
uvicorn worker of the service, one of a bare FastAPI app whose endpoint parses the same
body (the same ``PredictCreate`` schema) and answers a constant decision, and one of the
bare app plus ``learner.act``; then, interleaved round by round in the same session:

* ``raw``: the ASGI ceiling, a bare ASGI app on the same uvicorn that reads the body,
  ``orjson.loads`` it and answers a constant decision;
* ``bare``, ``bare_act``: the two FastAPI baselines;
* ``predict`` (DGT, h=6), ``predict_tel`` (TEL, depth 6, 10 trees), ``predict_hinge``
  (hinge forest, depth 6, 10 trees): one context per request, d=16, K=10 (with the Redis
  store also Redis's own CPU per request, from ``INFO cpu``);
* ``predict_regression``, ``predict_regression_tree``: a two-point regression model, d=16,
  the default (a 4-tree averaged forest, height 8) and a single DGT of height 8;
* ``batch_256``: 256 contexts per request (DGT), in decisions per second;
* ``predict_with_feedback``, ``tel_with_feedback``: predict under a stream of predict +
  feedback pairs offered at ``--feedback-rate`` pairs per second (16 connections, their
  pause calibrated under the predicts in short runs first and steered round by round;
  no verdict when the median rate reached falls short by more than 5%), each
  beside a run of ``bare`` in the same round (before it in even rounds, after it in odd
  ones): the p99 ratio to bare FastAPI's is taken within each round and its median over
  the rounds printed (goal: <= 1.3 for DGT), since bare FastAPI's own p99 swings
  between rounds on a loaded machine;
* ``predict_float20``, ``predict_named20``: a DGT on 20 floats against one on 20 named
  features (15 numbers, 5 categories) sent as a JSON object;
* ``two_workers`` (Redis only): ``predict`` on a two-worker server.
* ``predict@NAME``, ``batch_256@NAME`` (one pair per ``--library NAME``): the same rows on
  one more served process with ``BANDITREE_LIBRARY_PATHS=NAME`` (a hand-built part run on
  its library's own path: ``gc``, ``redis_wire``, ``front``; ``redis_wire`` changes
  nothing on the embedded store), in the same rounds; the ratios
  ``predict_vs_library_NAME`` and ``batch_vs_library_NAME`` are the hand-built part's
  gain (goal of a part that is kept: >= 1.10 on its row, docs/decisions).

Targets (printed as ratios measured in the same run): predict >= 0.5x raw req/s and
p99 <= 2x raw's p99 (predict / bare FastAPI is printed beside them); TEL and hinge >= 0.8x DGT's req/s; batch >= 50,000 decisions/s.
Then the checkpoint save and restore time of a trained h=10 tree with the Redis store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.speed._http_load import MODEL, feedback_script, run_wrk, start_server, wrk_script

REDIS_URL = "redis://127.0.0.1:6379/0"
CONTEXT = [float(v) for v in np.linspace(-1.0, 1.0, 16)]
BATCH = [
    [round(float(v), 6) for v in row] for row in np.random.default_rng(0).normal(size=(256, 16))
]
REGRESSION_MODEL = {"task": "regression", "n_features": 16, "estimator": "two_point"}
#: served model name -> learner config (all d=16, K=10, depth 6; forests of 10 trees)
MODELS = {
    "bench": MODEL,
    "bench-tel": {**MODEL, "kind": "tel", "height": 6, "n_trees": 10},
    "bench-hinge": {**MODEL, "kind": "hinge", "height": 6, "n_trees": 10},
    # regression, two-point: the default (a 4-tree averaged forest, height 8) and one tree
    "bench-reg": REGRESSION_MODEL,
    "bench-reg-tree": {**REGRESSION_MODEL, "kind": "dgt"},
    # 20 floats against 20 named features (15 numbers, 5 categories): the encoding's cost
    "bench-float20": {**MODEL, "n_features": 20},
    "bench-named20": {
        "n_actions": 10,
        "features": {
            **{f"n{j}": "numeric" for j in range(15)},
            **{f"c{j}": {"type": "categorical", "max_categories": 8} for j in range(5)},
        },
    },
}
CONTEXT20 = [float(v) for v in np.linspace(-1.0, 1.0, 20)]
NAMED20 = {
    **{f"n{j}": v for j, v in enumerate(CONTEXT20[:15])},
    **{f"c{j}": f"value{j}" for j in range(5)},
}
#: connections of the predict + feedback stream (each waits for its answers)
STREAM_CONNECTIONS = 16
BARE_PORT, SERVED_PORT, BARE_ACT_PORT, TWO_WORKER_PORT, RAW_PORT = 18081, 18082, 18083, 18084, 18085
#: the first port of the ``--library`` servers (one each)
LIBRARY_PORT = 18090
#: every row, in the order of a round (``--rows`` picks some)
ROWS = (
    "raw", "bare", "bare_act", "predict", "predict_tel", "predict_hinge", "predict_regression",
    "predict_regression_tree", "predict_float20", "predict_named20", "batch_256",
    "predict_with_feedback", "tel_with_feedback",
    "two_workers",
)  # fmt: skip


def redis_cpu_seconds() -> float:
    """User + system CPU seconds of the Redis server (``INFO cpu``)."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        cpu: dict[str, float] = client.info("cpu")  # type: ignore[assignment]
    finally:
        client.close()
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def http_figures(store: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    env = {"BANDITREE_DATA_DIR": str(work / f"data-{store}"), "BANDITREE_LOG_LEVEL": "warning"}
    prefix = f"banditree-bench:{uuid.uuid4().hex}:"
    prefixes = [prefix]
    if store == "redis":
        env.update(BANDITREE_REDIS_URL=REDIS_URL, BANDITREE_REDIS_PREFIX=prefix)
    single = wrk_script(work, {"context": CONTEXT})
    float20 = wrk_script(work, {"context": CONTEXT20}, "float20")
    named20 = wrk_script(work, {"context": NAMED20}, "named20")
    batch = wrk_script(work, {"contexts": BATCH}, "batch")
    processes = [
        start_server("benchmarks.speed._http_load:bare_app", {}, BARE_PORT),
        start_server("benchmarks.speed._http_load:bare_act_app", {}, BARE_ACT_PORT),
        start_server("service.main:create_app_from_env", env, SERVED_PORT),
        start_server("benchmarks.speed._http_load:raw_app", {}, RAW_PORT),
    ]
    rows = set(args.rows.split(",")) if args.rows else set(ROWS)
    two_workers = store == "redis" and args.two_workers and "two_workers" in rows
    if two_workers:
        prefixes.append(f"banditree-bench:{uuid.uuid4().hex}:")
        env2 = {**env, "BANDITREE_REDIS_PREFIX": prefixes[-1]}
        processes.append(
            start_server("service.main:create_app_from_env", env2, TWO_WORKER_PORT, workers=2)
        )
    bare, bare_act, served, raw = processes[:4]
    #: --library name -> (its served process, its URL)
    library: dict[str, tuple[Any, str]] = {}
    for i, part in enumerate(args.library):
        prefixes.append(f"banditree-bench:{uuid.uuid4().hex}:")
        env_library = {
            **env, "BANDITREE_LIBRARY_PATHS": part, "BANDITREE_REDIS_PREFIX": prefixes[-1],
            "BANDITREE_DATA_DIR": str(work / f"data-{store}-{part}"),
        }  # fmt: skip
        port = LIBRARY_PORT + i
        process = start_server("service.main:create_app_from_env", env_library, port)
        processes.append(process)
        library[part] = (process, f"http://127.0.0.1:{port}")
    base = f"http://127.0.0.1:{SERVED_PORT}"
    path = "/v1/models/{}/predict"
    seconds, conns = args.seconds, args.connections
    try:
        for name, config in MODELS.items():
            httpx.put(f"{base}/v1/models/{name}", json=config).raise_for_status()
        for _, other in library.values():
            httpx.put(f"{other}/v1/models/bench", json=MODEL).raise_for_status()
            await run_wrk(other + path.format("bench"), single, 2, conns)  # warm-up
        if two_workers:
            two = f"http://127.0.0.1:{TWO_WORKER_PORT}"
            httpx.put(f"{two}/v1/models/bench", json=MODEL).raise_for_status()
        await run_wrk(base + path.format("bench"), single, 2, conns)  # warm-up
        runs: dict[str, list[dict[str, float]]] = {}

        def add(name: str, figures: dict[str, float]) -> None:
            runs.setdefault(name, []).append(figures)

        def wrk_row(row: str, url: str, script: Path, pid: int | None) -> Any:
            """The wrk run of ``row``, or None (nothing to await) when ``--rows`` leaves it out."""
            if row not in rows:
                return asyncio.sleep(0)
            return run_wrk(url, script, seconds, conns, pid)

        asked = {m: args.feedback_rate for m in MODELS}  # the stream's rate, calibrated

        async def stream_pairs(model: str, run_seconds: int) -> float:
            """Run the stream for ``run_seconds``: the pairs per second it reached."""
            script = feedback_script(work, asked[model], CONTEXT, model, STREAM_CONNECTIONS)
            url = base + path.format(model)
            return (await run_wrk(url, script, run_seconds, STREAM_CONNECTIONS))[
                "requests_per_second"
            ] / 2

        def steer(model: str, reached: float) -> bool:
            """Scale the stream's asked rate by how far ``reached`` missed --feedback-rate:
            whether it was within 3%."""
            if abs(reached - args.feedback_rate) < 0.03 * args.feedback_rate:
                return True
            asked[model] *= min(max(args.feedback_rate / max(reached, 1.0), 0.5), 3.0)
            return False

        async def calibrate(model: str) -> None:
            """Short runs of the mixed load, the stream steered towards --feedback-rate (the
            predicts slow its answers down, so it is calibrated under them)."""
            url = base + path.format(model)
            for _ in range(3):
                reached, _ = await asyncio.gather(
                    stream_pairs(model, 3), run_wrk(url, single, 3, conns)
                )
                if steer(model, reached):
                    return

        async def with_feedback(model: str) -> tuple[dict[str, float], float]:
            stream = asyncio.create_task(stream_pairs(model, seconds + 2))
            await asyncio.sleep(1.0)
            figures = await run_wrk(base + path.format(model), single, seconds, conns)
            return figures, await stream

        async def beside_bare(model: str, first: bool) -> dict[str, float]:
            """The mixed load's run with bare FastAPI's run right before it (``first``) or
            after it: their p99 ratio is taken within the round, so a load that swings
            between rounds moves both sides (the goal reads the median of the ratios)."""
            bare_url = f"http://127.0.0.1:{BARE_PORT}" + path.format("bench")
            bare_p99 = (await run_wrk(bare_url, single, seconds, conns))["p99_ms"] if first else 0.0
            figures, absorbed = await with_feedback(model)
            steer(model, absorbed)  # for the next round
            if not first:
                bare_p99 = (await run_wrk(bare_url, single, seconds, conns))["p99_ms"]
            figures["feedback_per_second"] = absorbed
            figures["bare_p99_ms_same_round"] = bare_p99
            figures["p99_vs_bare_same_round"] = figures["p99_ms"] / bare_p99
            return figures

        for row, model in (("predict_with_feedback", "bench"), ("tel_with_feedback", "bench-tel")):
            if row in rows:
                await calibrate(model)
        for round_ in range(args.rounds):  # interleaved: a noisy neighbour hits every variant
            for row, port, process in (
                ("raw", RAW_PORT, raw), ("bare", BARE_PORT, bare), ("bare_act", BARE_ACT_PORT, bare_act)
            ):  # fmt: skip
                url = f"http://127.0.0.1:{port}" + path.format("bench")
                if (figures := await wrk_row(row, url, single, process.pid)) is not None:
                    add(row, figures)
            for row, model in (("predict", "bench"), ("predict_tel", "bench-tel"),
                               ("predict_hinge", "bench-hinge"),
                               ("predict_regression", "bench-reg"),
                               ("predict_regression_tree", "bench-reg-tree")):  # fmt: skip
                if row not in rows:
                    continue
                url = base + path.format(model)
                redis_before = redis_cpu_seconds() if store == "redis" else 0.0
                figures = await run_wrk(url, single, seconds, conns, served.pid)
                if store == "redis":  # Redis's own CPU per request (its other clients included)
                    requests = figures["requests_per_second"] * seconds
                    used = redis_cpu_seconds() - redis_before
                    figures["redis_cpu_us_per_request"] = 1e6 * used / max(requests, 1.0)
                add(row, figures)
            for row, model, script in (("predict_float20", "bench-float20", float20),
                                       ("predict_named20", "bench-named20", named20)):  # fmt: skip
                if row not in rows:
                    continue
                add(
                    row,
                    await run_wrk(base + path.format(model), script, seconds, conns, served.pid),
                )
            url = base + path.format("bench")
            if (figures := await wrk_row("batch_256", url, batch, served.pid)) is not None:
                figures["decisions_per_second"] = figures["requests_per_second"] * len(BATCH)
                add("batch_256", figures)
            for part, (process, other) in library.items():  # the library's way, same round
                url = other + path.format("bench")
                if (figures := await wrk_row("predict", url, single, process.pid)) is not None:
                    add(f"predict@{part}", figures)
                if (figures := await wrk_row("batch_256", url, batch, process.pid)) is not None:
                    figures["decisions_per_second"] = figures["requests_per_second"] * len(BATCH)
                    add(f"batch_256@{part}", figures)
            for row, model in (
                ("predict_with_feedback", "bench"),
                ("tel_with_feedback", "bench-tel"),
            ):
                if row in rows:  # bare first in even rounds, after in odd ones
                    add(row, await beside_bare(model, first=round_ % 2 == 0))
            if two_workers:
                two_url = f"http://127.0.0.1:{TWO_WORKER_PORT}" + path.format("bench")
                add("two_workers", await run_wrk(two_url, single, seconds, 2 * conns))
        result: dict[str, Any] = {
            name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            for name, rs in runs.items()
        }
        versions = {m: httpx.get(f"{base}/v1/models/{m}").json()["version"] for m in MODELS}
        result["model_versions_after"] = versions
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
        if store == "redis":
            from tests.service.conftest import delete_prefix

            for each in prefixes:
                delete_prefix(each)
    return add_ratios(result)


#: ratio name -> (row, figure) over (row, figure), all from the same run
RATIOS: dict[str, tuple[str, str, str, str]] = {
    "predict_vs_raw": ("predict", "requests_per_second", "raw", "requests_per_second"),
    "p99_vs_raw": ("predict", "p99_ms", "raw", "p99_ms"),
    "predict_vs_raw_per_cpu": ("predict", "requests_per_cpu_second", "raw", "requests_per_cpu_second"),
    "bare_vs_raw": ("bare", "requests_per_second", "raw", "requests_per_second"),
    "predict_vs_bare": ("predict", "requests_per_second", "bare", "requests_per_second"),
    "predict_vs_bare_per_cpu": ("predict", "requests_per_cpu_second", "bare", "requests_per_cpu_second"),
    "predict_vs_bare_act_per_cpu": ("predict", "requests_per_cpu_second", "bare_act", "requests_per_cpu_second"),
    "p99_vs_bare": ("predict", "p99_ms", "bare", "p99_ms"),
    "p99_with_feedback_vs_raw": ("predict_with_feedback", "p99_ms", "raw", "p99_ms"),
    "tel_vs_dgt": ("predict_tel", "requests_per_second", "predict", "requests_per_second"),
    "hinge_vs_dgt": ("predict_hinge", "requests_per_second", "predict", "requests_per_second"),
    "tel_vs_dgt_per_cpu": ("predict_tel", "requests_per_cpu_second", "predict", "requests_per_cpu_second"),
    "hinge_vs_dgt_per_cpu": ("predict_hinge", "requests_per_cpu_second", "predict", "requests_per_cpu_second"),
    "regression_forest_vs_tree": ("predict_regression", "requests_per_second", "predict_regression_tree", "requests_per_second"),
    "regression_forest_vs_tree_per_cpu": ("predict_regression", "requests_per_cpu_second", "predict_regression_tree", "requests_per_cpu_second"),
    # goal: a 20-feature JSON context (5 categorical) costs at most 1.3x a 20-float list
    "named20_cost_vs_float20": ("predict_float20", "requests_per_second", "predict_named20", "requests_per_second"),
    "named20_cost_vs_float20_per_cpu": ("predict_float20", "requests_per_cpu_second", "predict_named20", "requests_per_cpu_second"),
    "two_workers_vs_one": ("two_workers", "requests_per_second", "predict", "requests_per_second"),
    "two_workers_vs_raw": ("two_workers", "requests_per_second", "raw", "requests_per_second"),
}  # fmt: skip


def add_ratios(result: dict[str, Any]) -> dict[str, Any]:
    """The goal ratios, all between figures of the same run (those whose rows were run)."""
    result["ratios"] = {
        name: result[top][top_key] / result[bottom][bottom_key]
        for name, (top, top_key, bottom, bottom_key) in RATIOS.items()
        if top_key in result.get(top, {}) and bottom_key in result.get(bottom, {})
    }
    for name in result:  # a hand-built part against its library's way (--library)
        if "@" in name:
            row, part = name.split("@")
            short = "predict" if row == "predict" else "batch"
            for key in ("requests_per_second", "requests_per_cpu_second"):
                if key in result.get(row, {}):
                    suffix = "" if key == "requests_per_second" else "_per_cpu"
                    result["ratios"][f"{short}_vs_library_{part}{suffix}"] = (
                        result[row][key] / result[name][key]
                    )
    for row in ("predict_with_feedback", "tel_with_feedback"):  # goal <= 1.3 (the first)
        if "p99_vs_bare_same_round" in result.get(row, {}):  # the median of in-round ratios
            result["ratios"][f"{row}_p99_vs_bare"] = result[row]["p99_vs_bare_same_round"]
    return result


def report(store: str, f: dict[str, Any], rate: float) -> None:
    """Print one store's rows and its ratios (goals: predict >= 0.5x raw, p99 <= 2x raw's)."""
    for row in [*ROWS, *sorted(name for name in f if "@" in name)]:
        if row in f:
            cells = ", ".join(f"{k} {v:,.1f}" for k, v in f[row].items())
            print(f"[{store}] {row:24s} {cells}")
    for name, value in f["ratios"].items():
        print(f"[{store}] {name:34s} {value:.2f}")
    if (mixed := f["ratios"].get("predict_with_feedback_p99_vs_bare")) is not None:
        absorbed = f["predict_with_feedback"]["feedback_per_second"]
        verdict = "met" if mixed <= 1.3 else "NOT met"
        if absorbed < 0.95 * rate:  # not the goal's load: no verdict
            verdict = f"not judged (the stream reached {absorbed:,.0f} of {rate:,.0f} pairs/s)"
        print(f"[{store}] mixed-load predict p99 <= 1.3x bare FastAPI's: {verdict}")
    if "batch_256" in f:
        per_second = f["batch_256"]["decisions_per_second"]
        print(f"[{store}] batch of 256: {per_second:,.0f} decisions/s")


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
        await store.hold_model("h10")  # as the service does when it creates the model
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
    parser.add_argument(
        "--no-two-workers", dest="two_workers", action="store_false",
        help="skip the two-worker row (Redis store)",
    )  # fmt: skip
    parser.add_argument("--no-checkpoint", dest="checkpoint", action="store_false")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    parser.add_argument("--rows", default="", help=f"comma-separated rows to run (of {ROWS})")
    parser.add_argument(
        "--library", action="append", default=[], choices=["gc", "redis_wire", "front"],
        help="also run predict and batch_256 on a server with this hand-built part on its "
        "library's path (BANDITREE_LIBRARY_PATHS); repeatable",
    )  # fmt: skip
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian package wrk)")
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores.split(","):
            figures[store] = await http_figures(store, args, Path(tmp))
            report(store, figures[store], args.feedback_rate)
    if args.checkpoint and "redis" in args.stores.split(","):
        figures["checkpoint_h10_redis"] = await checkpoint_figures(repeats=20)
        print(f"[redis] h=10 checkpoint {figures['checkpoint_h10_redis']}")
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
