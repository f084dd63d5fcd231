"""Warm start against cold start: a DGT bandit started from a tree trained on 10% labelled data.

``python -m benchmarks.quality.warm_start [--datasets pendigits satimage] [--seeds 3]
[--labelled 0.1] [--rounds 2000] [--grid paper-l1] [--warm-learning-rate LR] [--plot FILE.png]``

Seed ``s`` shuffles the train split; its first ``--labelled`` share is the labelled
history: ``banditree train``'s protocol (:func:`~banditree.supervised.protocol.run_protocol`,
grid ``--grid``, the bandit's height) trains a tree on it.  The next ``--rounds`` rows
are the live stream, replayed with bandit feedback (0/1 loss of the played action)
through two learners of the same configuration and seed: ``cold`` (built from
nothing) and ``warm`` (``build_learner(config, initial_model=tree)``).  Printed per
dataset: each learner's progressive mean loss over the stream (mean +- sd over seeds),
the warm / cold ratio, and the held-out accuracy after the stream.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from banditree.datasets import Dataset, load
from banditree.learners import Feedback, Learner, build_learner
from banditree.supervised.grid import load_grid
from banditree.supervised.protocol import ProtocolOptions, run_protocol


def replay(
    config: dict[str, Any], initial: Any, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, Learner]:
    """The per-round 0/1 losses of one learner over the stream."""
    learner = build_learner(config, initial_model=initial)
    losses = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        decision = learner.act(x[i])
        losses[i] = float(decision.action != int(y[i]))
        learner.learn(decision, Feedback(loss=losses[i]))
    return losses, learner


def run_seed(ds: Dataset, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    order = np.random.default_rng(seed).permutation(ds.y_train.shape[0])
    n_labelled = round(args.labelled * order.shape[0])
    labelled, stream = order[:n_labelled], order[n_labelled : n_labelled + args.rounds]
    history = replace(ds, X_train=ds.X_train[labelled], y_train=ds.y_train[labelled])
    result = run_protocol(
        history,
        ProtocolOptions(
            height=args.height, grid=load_grid(args.grid, ds.task), seed=seed, progress=False
        ),
    )
    config = {
        "kind": "dgt",
        "n_features": ds.n_features,
        "n_actions": ds.n_classes,
        "height": args.height,
        "seed": seed,
    }
    out: dict[str, Any] = {"supervised_test_accuracy": result.report["test_accuracy"]}
    warm_config = dict(config)
    if args.warm_learning_rate is not None:
        warm_config["learning_rate"] = args.warm_learning_rate
    for name, initial, cfg in (("cold", None, config), ("warm", result.model, warm_config)):
        losses, learner = replay(cfg, initial, ds.X_train[stream], ds.y_train[stream])
        out[name] = {
            "losses": losses,
            "progressive_mean_loss": float(losses.mean()),
            "test_accuracy": float(np.mean(learner.predict(ds.X_test) == ds.y_test)),
        }
    return out


def _plot(curves: dict[str, dict[str, list[np.ndarray]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
    for dataset, by_learner in curves.items():
        for name, runs in by_learner.items():
            mean = np.mean([np.cumsum(r) / np.arange(1, r.shape[0] + 1) for r in runs], axis=0)
            style = "-" if name == "warm" else "--"
            ax.plot(np.arange(1, mean.shape[0] + 1), mean, style, label=f"{dataset} {name}")
    ax.set_xlabel("round")
    ax.set_ylabel("progressive mean 0/1 loss")
    ax.set_title("DGT bandit: warm start from 10% labelled vs cold")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["pendigits", "satimage"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--labelled", type=float, default=0.1, help="labelled share of train")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--height", type=int, default=6, help="the bandit's default height")
    parser.add_argument("--grid", default="paper-l1")
    parser.add_argument(
        "--warm-learning-rate", type=float, help="the warm learner's step (default: the same)"
    )
    parser.add_argument("--plot", type=Path, help="write the progressive-loss curves here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(
        f"{args.labelled:.0%} labelled, {args.rounds} bandit rounds, height {args.height}, "
        f"grid {args.grid}, {args.seeds} seeds, warm learning rate "
        f"{args.warm_learning_rate or 'as cold (the default)'}"
    )
    print(
        f"{'dataset':<12} {'cold loss':>15} {'warm loss':>15} {'warm/cold':>9} "
        f"{'cold acc':>8} {'warm acc':>8} {'tree acc':>8}"
    )
    curves: dict[str, dict[str, list[np.ndarray]]] = {}
    for name in args.datasets:
        ds = load(name)
        if ds.task != "classification":
            raise SystemExit(f"{name}: this benchmark replays classification data")
        runs = [run_seed(ds, s, args) for s in range(args.seeds)]
        curves[name] = {k: [r[k]["losses"] for r in runs] for k in ("cold", "warm")}

        def stat(key: str, field: str, runs: list[dict[str, Any]] = runs) -> tuple[float, float]:
            values = [r[key][field] for r in runs]
            return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0

        cold, warm = stat("cold", "progressive_mean_loss"), stat("warm", "progressive_mean_loss")
        tree = statistics.fmean(r["supervised_test_accuracy"] for r in runs)
        print(
            f"{name:<12} {cold[0]:>8.4f} +- {cold[1]:.3f} {warm[0]:>8.4f} +- {warm[1]:.3f} "
            f"{warm[0] / cold[0]:>9.3f} {stat('cold', 'test_accuracy')[0]:>8.4f} "
            f"{stat('warm', 'test_accuracy')[0]:>8.4f} {tree:>8.4f}",
            flush=True,
        )
    if args.plot is not None:
        _plot(curves, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
