"""Supervised DGT epoch speed: the fused training loop against the autograd loop, same data.

``python -m benchmarks.speed.train_speed [--rows 54000] [--height 8] [--epochs 3] [--repeats 2]
[--threads 1 2]``

The data are Connect-4 shaped (the set itself is not bundled): 42 board cells one-hot
over {blank, x, o} (126 features), 3 classes, labelled by the arg-max of three
random scores of the board (linear plus a few interactions), with 25% of labels
replaced by uniform noise, and a 20% test split.  Both loops train the same initial
tree with the same batch order (batch 128, the paper's Table 11 settings); runs
alternate (fused, autograd, fused, ...) so the machine's load hits both.  Printed: rows/s of each (median over repeats),
the ratio, seconds per epoch, and the test accuracy each reaches (the same updates up
to float32 rounding, so the accuracies should agree to a point or so).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch.nn import functional

from banditree.models.dgt.tree import DGTree
from banditree.supervised import TrainingConfig
from banditree.supervised.autograd_trainer import train_tree_autograd
from banditree.supervised.trainer import train_tree

TARGET_EPOCH_SECONDS = 1.0


def connect4_shaped(rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Standardised one-hot boards ``(rows, 126)`` and teacher labels in ``{0, 1, 2}``."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(3, size=(rows, 42), p=[0.45, 0.3, 0.25])
    x = np.zeros((rows, 126), dtype=np.float32)
    x[np.arange(rows)[:, None], 3 * np.arange(42)[None, :] + cells] = 1.0
    x = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    inputs = torch.as_tensor(x)
    scores = x @ rng.normal(size=(126, 3)) + np.abs(x[:, :6]) @ rng.normal(size=(6, 3))
    labels = torch.as_tensor(scores.argmax(axis=1))
    noisy = torch.as_tensor(rng.random(rows) < 0.25)
    labels[noisy] = torch.as_tensor(rng.integers(0, 3, size=int(noisy.sum())))
    return inputs, labels


def accuracy(tree: DGTree, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((tree(x).argmax(dim=1) == y).float().mean())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=54_000, help="training rows")
    parser.add_argument("--height", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    args = parser.parse_args(argv)
    n_test = args.rows // 4
    x, y = connect4_shaped(args.rows + n_test, seed=0)
    x_train, y_train, x_test, y_test = (
        x[: args.rows],
        y[: args.rows],
        x[args.rows :],
        y[args.rows :],
    )
    config = TrainingConfig(height=args.height, epochs=args.epochs, progress=False)
    previous = torch.get_num_threads()
    print(
        f"Connect-4 shaped: {args.rows} rows x 126 features, 3 classes, height {args.height}, "
        f"batch {config.batch_size}, {args.epochs} epochs, {args.repeats} repeats"
    )
    print(f"{'threads':>7} {'loop':<9} {'rows/s':>9} {'s/epoch':>8} {'test acc':>8}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        warm_up = TrainingConfig(height=args.height, epochs=1, progress=False)
        for trainer in (train_tree, train_tree_autograd):  # first-call costs out of the timing
            loss = "cross_entropy" if trainer is train_tree else functional.cross_entropy
            trainer(
                DGTree(126, 3, args.height), x_train[:2048], y_train[:2048], loss, warm_up,  # type: ignore[arg-type]
                torch.Generator().manual_seed(0),
            )  # fmt: skip
        speed: dict[str, list[float]] = {"fused": [], "autograd": []}
        acc: dict[str, float] = {}
        for _ in range(args.repeats):
            for loop in ("fused", "autograd"):
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(1)
                    tree = DGTree(126, 3, args.height)
                generator = torch.Generator().manual_seed(0)
                start = time.perf_counter()
                if loop == "fused":
                    train_tree(tree, x_train, y_train, "cross_entropy", config, generator)
                else:
                    train_tree_autograd(
                        tree, x_train, y_train, functional.cross_entropy, config, generator
                    )
                seconds = time.perf_counter() - start
                speed[loop].append(args.rows * args.epochs / seconds)
                acc[loop] = accuracy(tree, x_test, y_test)
        for loop in ("fused", "autograd"):
            rate = statistics.median(speed[loop])
            print(f"{threads:>7} {loop:<9} {rate:>9.0f} {args.rows / rate:>8.2f} {acc[loop]:>8.4f}")
        ratio = statistics.median(speed["fused"]) / statistics.median(speed["autograd"])
        epoch_seconds = args.rows / statistics.median(speed["fused"])
        print(
            f"        fused / autograd: {ratio:.2f}x; fused epoch {epoch_seconds:.2f} s "
            f"(target <= {TARGET_EPOCH_SECONDS} s: {'met' if epoch_seconds <= 1.0 else 'NOT met'}); "
            f"accuracy difference {100 * (acc['fused'] - acc['autograd']):+.2f} pt"
        )
    torch.set_num_threads(previous)


if __name__ == "__main__":
    main()
