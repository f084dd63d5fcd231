"""act + learn examples per second: DGT-Bandit beside Vowpal Wabbit, same stream, same run.

Usage::

    python -m benchmarks.speed.bandit_throughput [--n 20000] [--repeats 3]

Streams: a synthetic Covertype-shaped one (d = 54, K = 7, labels from a random
oblique tree so that the learner takes real branches) and Letter (d = 16, K = 26).
Each learner sees the same contexts in the same order with the same uniforms; each
figure is the best of ``repeats`` timed passes (the machine is shared, so the best
pass is the least disturbed one).  VW is timed twice: end to end (formatting its text
input from the numeric context is part of using it on this stream) and with the text
pre-formatted outside the timer (VW's own cost).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from simulate.vw import VWBandit, vw_line


def covertype_shaped_stream(n: int, seed: int = 0) -> tuple[FloatArray, np.ndarray]:
    """``n`` contexts in R^54 labelled 0..6 by a random height-4 oblique tree."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 54))
    w = rng.normal(size=(15, 54))
    node = np.zeros(n, dtype=np.int64)
    for _ in range(4):
        go_right = np.einsum("nd,nd->n", w[node], x) > 0
        node = 2 * node + np.where(go_right, 2, 1)
    return x, (node - 15) % 7


def time_dgt(x: FloatArray, y: np.ndarray, k: int, height: int) -> float:
    learner = build_learner(
        {"kind": "dgt", "n_features": x.shape[1], "n_actions": k, "height": height}
    )
    rows = list(x)
    labels = y.tolist()
    start = time.process_time()
    for row, label in zip(rows, labels, strict=True):
        decision = learner.act(row)
        learner.learn(decision, Feedback(loss=0.0 if decision.action == label else 1.0))
    return len(rows) / (time.process_time() - start)


def time_vw(x: FloatArray, y: np.ndarray, k: int, preformatted: bool) -> float:
    vw = VWBandit(k, epsilon=0.3)
    uniforms = np.random.default_rng(1).random(len(y)).tolist()
    labels = y.tolist()
    lines = [vw_line(r) for r in x.tolist()] if preformatted else None
    rows = x.tolist()
    start = time.process_time()
    for i, label in enumerate(labels):
        features = lines[i] if lines is not None else vw_line(rows[i])
        action, p, _ = vw.act(features, uniforms[i])
        vw.learn(features, action, p, 0.0 if action == label else 1.0)
    rate = len(labels) / (time.process_time() - start)
    vw.close()
    return rate


def best_of(repeats: int, run: Callable[[], float]) -> float:
    return max(run() for _ in range(repeats))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="examples per timed pass")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per learner")
    args = parser.parse_args(argv)
    letter = load("letter")
    streams = {
        "covertype-shaped d=54 K=7": covertype_shaped_stream(args.n),
        "letter d=16 K=26": (letter.X_train[: args.n], letter.y_train[: args.n]),
    }
    print(f"{'stream':28s} {'DGT h=6':>10s} {'VW e2e':>10s} {'VW text':>10s} {'DGT/VW e2e':>11s}")
    for name, (x, y) in streams.items():
        k = int(y.max()) + 1
        dgt = best_of(args.repeats, lambda x=x, y=y, k=k: time_dgt(x, y, k, 6))
        vw = best_of(args.repeats, lambda x=x, y=y, k=k: time_vw(x, y, k, False))
        vw_text = best_of(args.repeats, lambda x=x, y=y, k=k: time_vw(x, y, k, True))
        print(f"{name:28s} {dgt:10.0f} {vw:10.0f} {vw_text:10.0f} {dgt / vw:11.2f}")
    print("examples per second, best of", args.repeats, "passes of", args.n, "examples")


if __name__ == "__main__":
    main()
