"""Log export writer speed (rows/s, Parquet and CSV) and ``evaluate`` time for 3 candidates.

``python -m benchmarks.speed.log_products [--export-rows 1000000] [--evaluate-rows 100000]``

Export: wire-form rows (as the log endpoint streams them; 16 features, 10 actions)
written by :class:`banditree.logs.LogWriter` as Parquet, CSV and NDJSON, beside a
baseline measured in the same run: the standard library's ``csv.writer`` writing the
same rows' flat form (what the simulator's ``decisions.csv`` writer does).  Rows come
from one pre-built chunk of 50,000 distinct rows written repeatedly, so generating
them is not timed.

Evaluate: a 100,000-row epsilon-greedy log (pendigits contexts, loss 0 when the action
is the label) evaluated with three candidates (dgt, dgt height 4, linear) by
:func:`simulate.evaluate.evaluate`, beside the floor measured in the same run: the
same three learners only learning each row once (no probabilities, no estimates).
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from banditree.learners import Decision, Feedback, build_learner
from banditree.logs import LogWriter
from banditree.logs.record import flatten_row

CHUNK_ROWS = 50_000
CANDIDATES = (
    {"kind": "dgt"},
    {"kind": "dgt", "height": 4},
    {"kind": "linear"},
)


def _rows(n: int, d: int, k: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).round(6)
    action = rng.integers(0, k, n)
    return [
        {"offset": i, "event_id": f"{i:024x}", "time_seconds": 1.7e9 + i * 0.01,
         "model_version": i // 4, "context": x[i].tolist(), "action": int(action[i]),
         "propensity": 0.73, "greedy_action": int(action[i]), "loss": float(i % 2),
         "value": None, "greedy_value": None, "perturbation": 0, "probes": None,
         "losses": None, "source": "feedback"}
        for i in range(n)
    ]  # fmt: skip


def export_speed(total_rows: int, out: Path) -> dict[str, float]:
    """Rows per second of each writer (and the stdlib csv baseline)."""
    chunk = _rows(min(CHUNK_ROWS, total_rows), 16, 10)
    repeats = max(1, total_rows // len(chunk))
    n = repeats * len(chunk)
    speeds: dict[str, float] = {}
    for fmt in ("parquet", "csv", "ndjson"):
        path = out / f"log.{fmt}"
        started, cpu = time.perf_counter(), time.process_time()
        with LogWriter(path, fmt) as writer:  # type: ignore[arg-type]
            for _ in range(repeats):
                writer.write(chunk)
        speeds[fmt] = n / (time.perf_counter() - started)
        speeds[f"{fmt}_per_cpu_second"] = n / (time.process_time() - cpu)
        speeds[f"{fmt}_bytes_per_row"] = path.stat().st_size / n
    started, cpu = time.perf_counter(), time.process_time()
    with (out / "baseline.csv").open("w", newline="") as fh:
        sink = csv.writer(fh)
        header = list(flatten_row(chunk[0]))
        sink.writerow(header)
        for _ in range(repeats):
            for row in chunk:
                flat = flatten_row(row)
                sink.writerow([flat[h] for h in header])
    speeds["stdlib_csv_baseline"] = n / (time.perf_counter() - started)
    speeds["stdlib_csv_baseline_per_cpu_second"] = n / (time.process_time() - cpu)
    return speeds


def _pendigits_log(rows: int, path: Path) -> None:
    """An epsilon-greedy (0.3) log of a fixed linear rule on pendigits contexts."""
    from banditree.datasets import load

    ds = load("pendigits")
    rng = np.random.default_rng(1)
    pick = rng.integers(0, len(ds.y_train), rows)
    X, y = ds.X_train[pick], ds.y_train[pick].astype(np.int64)
    k = int(ds.y_train.max()) + 1
    weights = rng.normal(size=(X.shape[1], k))
    greedy = np.argmax(X @ weights, axis=1)
    explore = rng.random(rows) < 0.3
    action = np.where(explore, rng.integers(0, k, rows), greedy)
    propensity = np.where(action == greedy, 0.7 + 0.3 / k, 0.3 / k)
    with LogWriter(path) as writer:
        writer.write(
            {"offset": i, "event_id": str(i), "context": X[i].tolist(), "action": int(action[i]),
             "propensity": float(propensity[i]), "greedy_action": int(greedy[i]),
             "loss": float(action[i] != y[i])}
            for i in range(rows)
        )  # fmt: skip


def evaluate_time(rows: int, out: Path) -> dict[str, float]:
    """Seconds of ``evaluate`` with 3 candidates, and of the learn-only floor."""
    from banditree.logs import read_log
    from simulate.evaluate import EvaluateOptions, evaluate

    log = out / "pendigits.parquet"
    _pendigits_log(rows, log)
    configs = []
    for i, config in enumerate(CANDIDATES):
        path = out / f"candidate{i}.json"
        path.write_text(json.dumps(config))
        configs.append(path)
    started, cpu = time.perf_counter(), time.process_time()
    evaluate(EvaluateOptions(log, configs, out / "evaluate", n_bootstrap=500, progress=False))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    table = read_log(log)
    started, cpu = time.perf_counter(), time.process_time()
    for config in CANDIDATES:
        learner = build_learner({**config, "n_features": table.n_features, "n_actions": 10})
        for t in range(table.n_rows):
            decision = Decision(
                str(t), tuple(table.context[t].tolist()), 0,
                action=int(table.action[t]), propensity=float(table.propensity[t]),
            )  # fmt: skip
            learner.learn(decision, Feedback(loss=float(table.loss[t])))
    floor, floor_cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "evaluate_seconds": seconds,
        "evaluate_cpu_seconds": cpu_seconds,
        "learn_only_seconds": floor,
        "learn_only_cpu_seconds": floor_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--evaluate-rows", type=int, default=100_000, help="0 skips the evaluate timing"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        speeds = export_speed(args.export_rows, out)
        base = speeds["stdlib_csv_baseline"]
        print(f"export of {args.export_rows:,} rows (16 features):")
        cpu_base = speeds["stdlib_csv_baseline_per_cpu_second"]
        for fmt in ("parquet", "csv", "ndjson"):
            cpu = speeds[f"{fmt}_per_cpu_second"]
            print(
                f"  {fmt:8s} {speeds[fmt]:>12,.0f} rows/s wall, {cpu:>12,.0f} rows per CPU second "
                f"({speeds[fmt] / base:.2f}x / {cpu / cpu_base:.2f}x the stdlib csv baseline; "
                f"{speeds[f'{fmt}_bytes_per_row']:.0f} bytes/row)"
            )
        print(
            f"  {'baseline':8s} {base:>12,.0f} rows/s wall, {cpu_base:>12,.0f} rows per CPU second "
            "(csv.writer, same rows)"
        )
        if args.evaluate_rows <= 0:
            return
        timing = evaluate_time(args.evaluate_rows, out)
        print(
            f"evaluate, 3 candidates on {args.evaluate_rows:,} rows: "
            f"{timing['evaluate_seconds']:.1f} s wall ({timing['evaluate_cpu_seconds']:.1f} CPU s); "
            f"learn-only floor {timing['learn_only_seconds']:.1f} s wall "
            f"({timing['learn_only_cpu_seconds']:.1f} CPU s), "
            f"{timing['evaluate_cpu_seconds'] / timing['learn_only_cpu_seconds']:.2f}x in CPU time"
        )


if __name__ == "__main__":
    main()
