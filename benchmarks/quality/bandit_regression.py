"""Bandit regression (DGT paper, Table 6): test RMSE with one-point and two-point feedback.

Usage::

    python -m benchmarks.quality.bandit_regression [--datasets abalone cpu_act pol house_16H]
        [--splits 0] [--passes 40] [--supervised-epochs 200] [--supervised-heights 6 8]
        [--variant NAME JSON ...] [--seed-offset 0] [--tail-passes 10]
        [--out runs/bandit_regression]

Datasets: the paper's Abalone and Comp-Activ (``cpu_act``) splits, and ``pol`` and
``house_16H`` (seeded 80/20 split).  Each learner makes ``passes`` passes over the
training split (a fresh seeded order per pass); every round it plays a value and is
told only the squared loss of what it played (one-point, eq. 9) or the losses at its
two probes (two-point, eq. 10).  Learners are built exactly as the simulator builds
them (min-max target scaling, the ``LearnerConfig`` defaults).

Competitors on the same split and stream: the default model (the ``LearnerConfig``
default for regression, a 4-tree averaged ``dgt_forest``) with one-point and two-point
feedback; a single DGT with two-point; two-point at a constant step
(``learning_rate_decay`` 0, the default before the decay); the linear model with
two-point feedback (the linear baseline); the default told the target every round
(online full information; with the squared loss two-point is exact, so the same); the
supervised DGT (``banditree.supervised``, Algorithm 3 on the same split: RMSprop 1e-2,
batch 128, gradient-norm clip 1e-2, cosine with 3 restarts), the best of
``--supervised-heights`` on the test set (a choice that favours this anchor); and the
supervised forest: the mean prediction of ``--supervised-trees`` such trees (seeds
``split + 1000 j``, the first the single anchor; best over the heights), the
like-for-like anchor of the default forest.  Prints final test RMSE (original units)
beside the paper's Table 6 (two-point) and Table 1 (supervised) figures, the ratios of
the default's two-point RMSE to the paper, the supervised DGT, the supervised forest
and the linear baseline; writes ``report.md`` and ``curves.png`` (test RMSE against
loss queries) to ``--out``.

``--variant NAME JSON`` (repeatable) adds a two-point learner with ``JSON``'s
``LearnerConfig`` settings over the defaults (for example ``--variant l2_0
'{"l2": 0}'``), reported in its own column: a way to measure a setting without
changing the default.  ``--seed-offset k`` seeds learners and stream orders with
``split + 1000 k`` (the split itself is unchanged), for a second look at the noise.
Final RMSE per split is printed for every learner, and (``--tail-passes N``, 10 by
default) the test RMSE after each of the last N passes, pooled over splits: its mean
and range.  On Comp-Activ one run's test RMSE moves by 0.15-0.35 over its last 10
passes at fixed settings (the default, split 0: 3.01 to 3.22 while the training RMSE
stays at 2.35-2.41), so a 3 % difference of the final mean over three splits is within
one run's noise; the tail's mean is the steadier comparison of two settings.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tqdm import tqdm

from banditree.datasets import REGRESSION, Dataset, load
from banditree.learners import Learner, build_learner
from banditree.learners.config import REGRESSION_FOREST_TREES
from banditree.supervised import DGTRegressor
from simulate.agents import learner_config
from simulate.environments import FeedbackMode, RegressionEnvironment

#: paper figures, RMSE: Table 6 (DGT-Bandit two-point, squared loss), Table 1 (supervised)
PAPER = {"abalone": (2.16, 2.15), "cpu_act": (3.05, 2.91)}
#: the perturbation delta in target units: the paper's 0.5, or 0.5% of the target range
#: for house prices (a 0.5 dollar perturbation would be below the noise of any loss)
DELTA = {"house_16H": 0.005}
#: name -> (model kind, None: the default's; feedback; settings beside the defaults)
LEARNERS: dict[str, tuple[str | None, FeedbackMode, dict[str, Any]]] = {
    "one_point": (None, "one_point", {}),
    "two_point": (None, "two_point", {}),
    "two_point_single_tree": ("dgt", "two_point", {}),
    "two_point_constant": (None, "two_point", {"learning_rate_decay": 0}),
    "linear_two_point": ("linear", "two_point", {}),
    "full_information": (None, "full", {}),
}


class Run(NamedTuple):
    """One learner's online run (:func:`run_learner`)."""

    learner: Learner
    curve: list[tuple[int, float]]
    rate: float
    #: test RMSE after each of the last passes (the final value last): how far the
    #: final figure swings with the last updates at the same settings
    tail: list[float]


def rmse(learner: Learner, ds: Dataset) -> float:
    return float(np.sqrt(np.mean((learner.predict(ds.X_test) - ds.y_test) ** 2)))


def run_learner(
    ds: Dataset,
    kind: str | None,
    mode: FeedbackMode,
    passes: int,
    seed: int,
    overrides: dict[str, Any],
    tail_passes: int = 0,
) -> Run:
    """Train one learner online: the learner, its curve ``[(queries, test RMSE)]``, its
    act + learn rounds per CPU second (evaluations not counted) and its test RMSE after
    each of the last ``tail_passes`` passes."""
    env = RegressionEnvironment(mode=mode, loss="squared")
    span = float(ds.y_train.max() - ds.y_train.min())
    delta = DELTA[ds.name] * span if ds.name in DELTA else None
    config = learner_config(kind=kind, dataset=ds, env=env, config={"delta": delta}, seed=seed)
    learner = build_learner({**config, **overrides})
    rounds = passes * len(ds.y_train)
    marks = set(np.unique(np.geomspace(100, rounds, 12).astype(int)).tolist())
    queries_per_round = 2 if mode == "two_point" else 1
    curve: list[tuple[int, float]] = []
    rng = np.random.default_rng(seed)
    done, seconds = 0, 0.0
    tail: list[float] = []
    for pass_ in range(passes):
        start = time.process_time()
        for i in rng.permutation(len(ds.y_train)).tolist():
            d = learner.act(ds.X_train[i])
            learner.learn(d, env.feedback(d, float(ds.y_train[i])))
            done += 1
            if done in marks:
                seconds += time.process_time() - start
                curve.append((done * queries_per_round, rmse(learner, ds)))
                start = time.process_time()
        seconds += time.process_time() - start
        if pass_ >= passes - tail_passes:
            tail.append(rmse(learner, ds))
    return Run(learner, curve, done / seconds, tail)


def supervised_anchors(
    ds: Dataset, heights: list[int], epochs: int, seed: int, trees: int = 1
) -> tuple[float, float]:
    """Test RMSE of the supervised DGT (Algorithm 3 defaults) and of the mean of ``trees``
    of them (seeds ``seed + 1000 j``, the first the single tree), each the best over
    ``heights``: the anchors of one tree and of an averaged forest of as many."""
    single, forest = [], []
    for height in heights:
        predictions = [
            DGTRegressor(height=height, epochs=epochs, seed=seed + 1000 * j, progress=False)
            .fit(ds.X_train, ds.y_train)
            .predict(ds.X_test)
            for j in range(trees)
        ]
        for scores, prediction in ((single, predictions[0]), (forest, np.mean(predictions, 0))):
            scores.append(float(np.sqrt(np.mean((prediction - ds.y_test) ** 2))))
    return min(single), min(forest)


def supervised_rmse(
    ds: Dataset, heights: list[int], epochs: int, seed: int, trees: int = 1
) -> float:
    """The anchor of an averaged forest of ``trees`` supervised DGTs (1: one tree)."""
    return supervised_anchors(ds, heights, epochs, seed, trees)[1]


def tail_table(tails: dict[str, dict[str, list[list[float]]]], passes: int) -> str:
    """The test RMSE after each of the last ``passes`` passes, pooled over splits, per
    dataset and learner: its mean and range beside the final figure's mean.

    The final RMSE of one run is one draw from this range: a difference between two
    settings smaller than the range says little about which is better.
    """
    lines = [
        f"| data | learner | final (mean over splits) | last {passes} passes: mean | min | max |",
        "|---|---|---|---|---|---|",
    ]
    for name, by_learner in tails.items():
        for learner_name, per_split in by_learner.items():
            pooled = [v for values in per_split for v in values]
            final = float(np.mean([values[-1] for values in per_split]))
            lines.append(
                f"| {name} | {learner_name} | {final:.4g} | {np.mean(pooled):.4g}"
                f" | {min(pooled):.4g} | {max(pooled):.4g} |"
            )
    return "\n".join(lines) + "\n"


def write_outputs(
    results: dict[str, dict[str, Any]],
    curves: dict[str, dict[str, list[Any]]],
    out: Path,
    variants: list[str] | None = None,
) -> str:
    variants = variants or []
    nan = float("nan")
    lines = [
        "| data | one-point | two-point | two-point, single tree | two-point, constant step"
        " | linear two-point | full-info online | supervised DGT | supervised forest"
        " | paper 2pt | paper sup | 2pt / paper | 2pt / supervised | 2pt / supervised forest"
        " | 2pt / linear |" + "".join(f" {v} |" for v in variants),
        "|---|" + "---|" * 14 + "---|" * len(variants),
    ]
    for name, r in results.items():
        paper_two, paper_sup = PAPER.get(name, (nan, nan))
        two, forest = r["two_point"], r.get("supervised_forest", nan)
        lines.append(
            f"| {name} | {r['one_point']:.4g} | {two:.4g} | {r['two_point_single_tree']:.4g}"
            f" | {r['two_point_constant']:.4g} | {r['linear_two_point']:.4g}"
            f" | {r['full_information']:.4g} | {r['supervised']:.4g} | {forest:.4g}"
            f" | {paper_two:.2f} | {paper_sup:.2f} | {two / paper_two:.3f}"
            f" | {two / r['supervised']:.3f} | {two / forest:.3f}"
            f" | {two / r['linear_two_point']:.3f} |" + "".join(f" {r[v]:.4g} |" for v in variants)
        )
    markdown = "\n".join(lines) + "\n"
    (out / "report.md").write_text(markdown)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4.5 * len(curves), 3.8), squeeze=False)
    for ax, (name, by_learner) in zip(axes[0], curves.items(), strict=True):
        for learner, points in by_learner.items():
            q, v = zip(*points, strict=True)
            ax.plot(q, v, marker=".", label=learner)
        ax.axhline(results[name]["supervised"], color="black", linestyle=":", label="supervised")
        forest = results[name].get("supervised_forest", float("nan"))
        if np.isfinite(forest):
            ax.axhline(forest, color="grey", linestyle="--", label="supervised forest")
        ax.set_xscale("log")
        ax.set_xlabel("loss queries")
        ax.set_ylabel("test RMSE")
        ax.set_title(name)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=110)
    plt.close(fig)
    return markdown


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(REGRESSION), choices=REGRESSION)
    parser.add_argument("--splits", nargs="+", type=int, default=[0])
    parser.add_argument("--passes", type=int, default=40)
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=list(LEARNERS))
    parser.add_argument("--supervised-epochs", type=int, default=200)
    parser.add_argument("--supervised-heights", nargs="+", type=int, default=[6, 8])
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument(
        "--variant",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "JSON"),
        help="a two-point learner with these LearnerConfig settings over the defaults",
    )
    parser.add_argument("--seed-offset", type=int, default=0)
    parser.add_argument(
        "--supervised-trees",
        type=int,
        default=REGRESSION_FOREST_TREES,
        help="trees of the supervised forest anchor (the mean of as many supervised DGTs; "
        "default: as many as the default bandit forest; 1: none)",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/bandit_regression"))
    parser.add_argument(
        "--tail-passes",
        type=int,
        default=10,
        help="also report the test RMSE after each of the last N passes (mean, min, max): "
        "how far the final figure swings at the same settings (0: not reported)",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    overrides = {} if args.learning_rate is None else {"learning_rate": args.learning_rate}
    learners = {name: LEARNERS[name] for name in args.learners}
    for name, settings_json in args.variant:
        settings = json.loads(settings_json)
        if name in LEARNERS or not isinstance(settings, dict):
            parser.error(f"--variant {name}: a new name and a JSON object of settings")
        learners[name] = (None, "two_point", settings)
    variants = [name for name, _ in args.variant]
    results: dict[str, dict[str, Any]] = {}
    curves: dict[str, dict[str, list[Any]]] = {}
    rates: dict[str, list[float]] = {}
    tails: dict[str, dict[str, list[list[float]]]] = {}
    tail_passes = min(max(args.tail_passes, 0), args.passes)
    jobs = [(d, s) for d in args.datasets for s in args.splits]
    for name, split in tqdm(jobs, desc="dataset x split", disable=args.no_progress):
        ds = load(name, split=split, seed=split)
        seed = split + 1000 * args.seed_offset
        scores = results.setdefault(
            name, {k: [] for k in [*LEARNERS, *variants, "supervised", "supervised_forest"]}
        )
        for learner_name, (kind, mode, settings) in learners.items():
            run = run_learner(
                ds, kind, mode, args.passes, seed, {**settings, **overrides}, tail_passes
            )
            scores[learner_name].append(rmse(run.learner, ds))
            rates.setdefault(learner_name, []).append(run.rate)
            curves.setdefault(name, {})[learner_name] = run.curve
            if run.tail:
                tails.setdefault(name, {}).setdefault(learner_name, []).append(run.tail)
        single, forest = supervised_anchors(
            ds, args.supervised_heights, args.supervised_epochs, split, args.supervised_trees
        )
        scores["supervised"].append(single)
        if args.supervised_trees > 1:
            scores["supervised_forest"].append(forest)
    for name, r in results.items():
        for learner_name, values in r.items():
            if values:
                per_split = ", ".join(f"{v:.4g}" for v in values)
                print(f"{name} {learner_name}: splits {args.splits}: {per_split}")
    means = {
        n: {k: float(np.mean(v)) if v else float("nan") for k, v in r.items()}
        for n, r in results.items()
    }
    print("act + learn rounds per CPU second (median over datasets and splits):")
    for learner_name, values in rates.items():
        print(f"  {learner_name}: {np.median(values):,.0f}")
    print(f"test RMSE, mean over splits {args.splits}, {args.passes} passes")
    print(write_outputs(means, curves, args.out, variants))
    if tails:
        table = tail_table(tails, tail_passes)
        print(f"test RMSE after each of the last {tail_passes} passes, splits {args.splits}")
        print(table)
        with (args.out / "report.md").open("a") as report:
            report.write(f"\nTest RMSE after each of the last {tail_passes} passes:\n\n{table}")


if __name__ == "__main__":
    main()
