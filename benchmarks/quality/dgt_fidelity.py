"""Supervised DGT against the paper's Tables 1-2 (seed 002), on the bundled copies of the data.

``python -m benchmarks.quality.dgt_fidelity [--datasets segmentation abalone] [--heights 6 8]
[--seeds 3] [--epochs 60] [--hidden table12] [--momentum 0.3]``

For each dataset the best height (by mean test score over the seeds) is reported
beside the paper's figure.  Without ``--heights`` only the paper's best height is
run.  Classification datasets keep one seeded 80/20 split (the paper used the
LIBSVM default splits, which we do not have) and vary the initialisation seed;
Abalone and Comp-Activ use the paper's own five splits, seed ``s`` on split ``s``.

Each row also prints the share of node activations inside the straight-through
window ``|a| <= 1`` at initialisation and after training: with ``--hidden table12``
and the paper's RMSprop settings (lr 1e-2, eps 1e-8) that share collapses to ~0
(RMSprop moves every entry of the 1000-wide layers by ~lr per step, the collapsed
product explodes and the node gradients die); ``--rmsprop-eps 1e-3`` keeps it trainable.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from banditree.datasets import load
from banditree.supervised import DGTClassifier, DGTRegressor, TrainingConfig


@dataclass(frozen=True)
class PaperFigure:
    """One row of the paper's Table 1 (RMSE) or Table 2 (accuracy %)."""

    metric: str
    value: float
    height: int
    epochs: int  # our default budget for this dataset


PAPER = {
    "pendigits": PaperFigure("accuracy %", 96.36, 8, 40),
    "satimage": PaperFigure("accuracy %", 86.64, 6, 60),
    "segmentation": PaperFigure("accuracy %", 95.86, 8, 100),
    "letter": PaperFigure("accuracy %", 86.13, 10, 40),
    "abalone": PaperFigure("RMSE", 2.15, 6, 60),
    "cpu_act": PaperFigure("RMSE", 2.91, 6, 100),
}


def straight_through_fraction(
    model: DGTClassifier | DGTRegressor, x: np.ndarray
) -> tuple[float, float]:
    """Share of node activations with ``|a| <= 1`` at initialisation and after training."""
    assert model.tree_ is not None
    z = torch.as_tensor(model.standardizer_.transform(x), dtype=torch.float32)
    initial = model.initial_tree(x.shape[1], model.tree_.n_outputs)
    with torch.no_grad():
        before = float((initial.activations(z).abs() <= 1).float().mean())
        after = float((model.tree_.activations(z).abs() <= 1).float().mean())
    return before, after


def run_one(name: str, config: TrainingConfig) -> tuple[float, float, float, float]:
    """Test score, seconds, and straight-through window shares for one seed."""
    ds = load(name, split=config.seed % 5) if name in ("abalone", "cpu_act") else load(name)
    start = time.perf_counter()
    model: DGTClassifier | DGTRegressor
    if ds.task == "classification":
        clf = DGTClassifier(config).fit(ds.X_train, ds.y_train)
        score, model = 100.0 * clf.score(ds.X_test, ds.y_test), clf
    else:
        reg = DGTRegressor(config).fit(ds.X_train, ds.y_train)
        score, model = reg.rmse(ds.X_test, ds.y_test), reg
    seconds = time.perf_counter() - start
    before, after = straight_through_fraction(model, ds.X_train[:2000])
    return score, seconds, before, after


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(PAPER), choices=list(PAPER))
    parser.add_argument("--heights", type=int, nargs="+", help="default: the paper's best height")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, help="default: a per-dataset budget")
    parser.add_argument("--hidden", choices=["none", "table12"], default="none")
    parser.add_argument("--learning-rate", type=float, default=TrainingConfig.learning_rate)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--rmsprop-eps", type=float, default=TrainingConfig.rmsprop_eps)
    parser.add_argument("--regularization", choices=["l1", "l2"], default="l2")
    parser.add_argument("--reg-strength", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.datasets:
        paper = PAPER[name]
        best: tuple[float, float, int, float, float, float] | None = None
        for height in args.heights or [paper.height]:
            config = TrainingConfig(
                height=height,
                hidden="table12" if args.hidden == "table12" else (),
                epochs=args.epochs or paper.epochs,
                learning_rate=args.learning_rate,
                min_learning_rate=min(TrainingConfig.min_learning_rate, args.learning_rate),
                momentum=args.momentum,
                rmsprop_eps=args.rmsprop_eps,
                regularization=args.regularization,
                reg_strength=args.reg_strength,
                progress=False,
            )
            runs = [run_one(name, replace(config, seed=s)) for s in range(args.seeds)]
            scores = [r[0] for r in runs]
            mean = statistics.fmean(scores)
            std = statistics.stdev(scores) if len(scores) > 1 else 0.0
            seconds = statistics.fmean(r[1] for r in runs)
            window = (statistics.fmean(r[2] for r in runs), statistics.fmean(r[3] for r in runs))
            print(
                f"  {name} h={height}: {mean:.2f} +- {std:.2f} ({seconds:.0f} s/seed, "
                f"|a|<=1 share {window[0]:.2f} at init, {window[1]:.2f} trained)",
                flush=True,
            )
            better = best is None or (mean > best[0] if paper.metric != "RMSE" else mean < best[0])
            if better:
                best = (mean, std, height, seconds, *window)
        assert best is not None
        rows.append((name, paper, best, args.epochs or paper.epochs))
    print(
        f"\nL={'3 (Table 12)' if args.hidden == 'table12' else '1'}, lr {args.learning_rate}, "
        f"momentum {args.momentum}, "
        f"RMSprop eps {args.rmsprop_eps}, {args.regularization} {args.reg_strength}, "
        f"{args.seeds} seeds"
    )
    print(
        f"{'dataset':<13} {'metric':<11} {'ours':>14} {'h':>3} {'epochs':>6} {'paper':>7} {'h':>3} {'gap':>8}"
    )
    for name, paper, (mean, std, height, _, _, _), epochs in rows:
        if paper.metric == "RMSE":
            gap = f"{100.0 * (mean - paper.value) / paper.value:+.1f}%"
        else:
            gap = f"{mean - paper.value:+.2f}pt"
        print(
            f"{name:<13} {paper.metric:<11} {mean:>7.2f} +- {std:<4.2f} {height:>3} {epochs:>6} "
            f"{paper.value:>7.2f} {paper.height:>3} {gap:>8}"
        )


if __name__ == "__main__":
    main()
