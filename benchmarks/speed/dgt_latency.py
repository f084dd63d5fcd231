"""Hard-prediction latency and throughput of the frozen DGT beside a plain numpy matvec.

``python -m benchmarks.speed.dgt_latency [--heights 6 10] [--features 54] [--outputs 7]``

Single decision: :meth:`FrozenTree.predict_one` (``h`` dot products) against one
``(2**h - 1, d + 1) @ (d + 1,)`` numpy product, i.e. evaluating every node once.
Batch: :meth:`FrozenTree.predict` on 4096 rows against the ``(4096, d + 1) @ (d + 1,
2**h - 1)`` product.  Both are measured in the same run on one BLAS thread; the
issue's target is a single decision under 15 microseconds at ``h = 6``.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from banditree.models.dgt.tree import DGTree

TARGET_SINGLE_MICROSECONDS = 15.0


def best_seconds_per_call(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Best of ``repeat`` timings of ``number`` calls, per call."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def measure(
    height: int, n_features: int, n_outputs: int, batch: int, calls: int
) -> dict[str, float]:
    """Latency and throughput figures for one tree size."""
    torch.manual_seed(height)
    frozen = DGTree(n_features, n_outputs, height).freeze()
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(1024, n_features))
    rows_aug = np.concatenate((rows, np.ones((1024, 1))), axis=1)
    weights = frozen.weights.copy()  # (2**h - 1, d + 1)
    state = {"i": 0}

    def tree_one() -> object:
        state["i"] = (state["i"] + 1) & 1023
        return frozen.predict_one(rows[state["i"]])

    def matvec_one() -> object:
        state["i"] = (state["i"] + 1) & 1023
        return weights @ rows_aug[state["i"]]

    x_batch = rng.normal(size=(batch, n_features))
    x_batch_aug = np.concatenate((x_batch, np.ones((batch, 1))), axis=1)
    tree_one_s = best_seconds_per_call(tree_one, calls)
    matvec_one_s = best_seconds_per_call(matvec_one, calls)
    tree_batch_s = best_seconds_per_call(lambda: frozen.predict(x_batch), max(1, calls // 2000))
    matmul_batch_s = best_seconds_per_call(lambda: x_batch_aug @ weights.T, max(1, calls // 2000))
    return {
        "tree_single_us": tree_one_s * 1e6,
        "matvec_single_us": matvec_one_s * 1e6,
        "tree_batch_decisions_per_s": batch / tree_batch_s,
        "matmul_batch_rows_per_s": batch / matmul_batch_s,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heights", type=int, nargs="+", default=[6, 10])
    parser.add_argument("--features", type=int, default=54)
    parser.add_argument("--outputs", type=int, default=7)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args(argv)
    print(f"d={args.features} K={args.outputs} batch={args.batch}, one BLAS thread, best of 5")
    header = (
        f"{'h':>3} {'tree us':>9} {'matvec us':>10} {'ratio':>6} "
        f"{'tree dec/s':>12} {'matmul rows/s':>14} {'ratio':>6}"
    )
    print(header)
    with threadpool_limits(limits=1):
        for height in args.heights:
            r = measure(height, args.features, args.outputs, args.batch, args.calls)
            print(
                f"{height:>3} {r['tree_single_us']:>9.2f} {r['matvec_single_us']:>10.2f} "
                f"{r['tree_single_us'] / r['matvec_single_us']:>6.2f} "
                f"{r['tree_batch_decisions_per_s']:>12.0f} {r['matmul_batch_rows_per_s']:>14.0f} "
                f"{r['tree_batch_decisions_per_s'] / r['matmul_batch_rows_per_s']:>6.2f}"
            )
            if height == 6:
                verdict = "met" if r["tree_single_us"] < TARGET_SINGLE_MICROSECONDS else "MISSED"
                print(
                    f"    target single decision < {TARGET_SINGLE_MICROSECONDS} us at h=6: {verdict}"
                )


if __name__ == "__main__":
    main()
