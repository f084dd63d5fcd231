"""A ranking stream through Microsoft's JavaScript Personalizer SDK against VW's best ADF explorer.

One command::

    python -m benchmarks.ranking_personalizer_js [--datasets pendigits letter] [--seed 0]
        [--rounds 4000] [--candidates 10] [--out FILE]

Needs ``node`` and ``npm ci`` in ``tests/personalizer_js``.  For each stream of
:func:`simulate.ranking_streams.build_stream` (a public classification set turned into a
ranking stream: classes are candidates described by their catalogue centroids, reward 1
for the row's class), a banditree server (one uvicorn worker, embedded store, defaults)
serves a fresh ranking model at the root, with a key scoped to it, and
``tests/personalizer_js/stream.js`` plays the stream through
``@azure/cognitiveservices-personalizer`` 2.0.1 (rank, then reward), changing only the
endpoint and key.  The same stream is played in process by VW's ``--cb_explore_adf``
explorers of :mod:`benchmarks.ranking_vs_vw` (squarecb, epsilon 0.05 and bag 5, each with
and without ``-q ca``).  Reported: progressive mean reward (exploration included) of the
JavaScript path and of the best VW explorer, and their ratio (goal: >= 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks._http_load import ROOT, start_server
from benchmarks.ranking_vs_vw import VW_ALGORITHMS, run_vw
from simulate.ranking_streams import Stream, build_stream

PORT = 18093
PACKAGE = ROOT / "tests" / "personalizer_js"
KEY = "stream-key-1"


def stream_rounds(stream: Stream) -> list[dict[str, Any]]:
    """The stream as Personalizer rank requests: named context and candidate features."""
    rounds = []
    for context, candidates, label in zip(
        stream.contexts, stream.candidates, stream.labels, strict=True
    ):
        actions = [
            {"id": f"class{int(k)}",
             "features": [{f"a{i}": round(float(v), 6) for i, v in enumerate(stream.class_features[k])}]}
            for k in candidates
        ]  # fmt: skip
        rounds.append({
            "context": {f"x{i}": round(float(v), 6) for i, v in enumerate(context)},
            "actions": actions, "label": f"class{int(label)}",
        })  # fmt: skip
    return rounds


def through_javascript(stream: Stream, workdir: Path) -> dict[str, Any]:
    """Play ``stream`` through the JavaScript SDK against a fresh server; its figures."""
    scoped = [{"key": KEY, "roles": ["predict", "read", "admin"], "models": ["stream"]}]
    env = {
        "BANDITREE_DATA_DIR": str(workdir / "data"),
        "BANDITREE_ADMIN_KEYS": "bench-admin-key",
        "BANDITREE_SCOPED_KEYS": json.dumps(scoped),
    }
    server = start_server("service.main:create_app_from_env", env, PORT)
    try:
        url = f"http://127.0.0.1:{PORT}"
        created = httpx.put(
            f"{url}/v1/models/stream", json={"task": "ranking"},
            headers={"Authorization": "Bearer bench-admin-key"},
        )  # fmt: skip
        created.raise_for_status()
        path = workdir / f"{stream.name}.json"
        path.write_text(json.dumps({"rounds": stream_rounds(stream)}))
        done = subprocess.run(
            ["node", str(PACKAGE / "stream.js"), url, KEY, str(path)],
            capture_output=True, text=True, check=True, cwd=PACKAGE,
            env={"PATH": os.environ["PATH"]},
        )  # fmt: skip
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        server.terminate()
        server.wait(timeout=60)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=["pendigits", "letter"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=4000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results = []
    for name in args.datasets:
        stream = build_stream(name, args.seed, args.rounds, args.candidates)
        with tempfile.TemporaryDirectory() as work:
            js = through_javascript(stream, Path(work))
        vw = {
            algo: 1.0 - run_vw(VW_ALGORITHMS[algo])(stream, args.seed)["loss"]
            for algo in VW_ALGORITHMS
        }
        best = max(vw, key=lambda a: vw[a])
        results.append({
            "stream": name, "rounds": js["rounds"], "javascript_reward": js["reward"],
            "javascript_seconds": js["seconds"], "vw_rewards": vw, "best_vw": best,
            "ratio": js["reward"] / vw[best],
        })  # fmt: skip
        print(
            f"{name}: JavaScript SDK {js['reward']:.4f} ({js['rounds'] / js['seconds']:.0f} "
            f"rounds/s), best VW {best} {vw[best]:.4f}, ratio {js['reward'] / vw[best]:.3f}",
            flush=True,
        )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"when": time.time(), "results": results}, indent=1))


if __name__ == "__main__":
    main()
