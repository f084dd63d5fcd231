"""Shape of the DGT paper's bandit figures on the bundled data (figures 2-3, table 6).

    python -m benchmarks.quality.simulate_figures --out runs/figures

* held-out accuracy vs queries: DGT-Bandit (h=6), linear epsilon-greedy and VW
  ``--cb_explore`` on Letter and PenDigits (bandit feedback, 0/1 loss);
* held-out RMSE vs queries: DGT-Bandit (h=8) and linear, one-point feedback, on
  Abalone and Comp-Activ (split 0);
* final RMSE with two-point feedback beside the full-information DGT of the same run,
  and the paper's numbers (table 6 two-point, table 1 supervised).

Every run writes its own ``report.json``, ``curves.csv`` and PNGs under ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from simulate import SimulationOptions, simulate

#: Paper numbers (seed 002): table 6 (two-point, squared loss) and table 1 (supervised DGT).
PAPER_TWO_POINT_RMSE = {"abalone": 2.16, "cpu_act": 3.05}
PAPER_SUPERVISED_RMSE = {"abalone": 2.15, "cpu_act": 2.91}


def _fmt(entry: dict[str, Any], figure: str) -> str:
    low, high = entry[f"{figure}_ci95"]
    return f"{entry[figure]:.4f} [{low:.4f}, {high:.4f}]"


def _curve_table(report: dict[str, Any], figure: str) -> list[str]:
    names = list(report["learners"])
    lines = ["| queries | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    curves = {n: {p["queries"]: p[figure] for p in report["learners"][n]["curve"]} for n in names}
    for q in report["learners"][names[0]]["curve"]:
        row = [f"{curves[n].get(q['queries'], float('nan')):.4f}" for n in names]
        lines.append(f"| {q['queries']} | " + " | ".join(row) + " |")
    return lines


def classification(out: Path, *, passes: int, seeds: int) -> list[str]:
    lines: list[str] = []
    for name in ("letter", "pendigits"):
        report = simulate(
            SimulationOptions(
                data=name,
                model="dgt",
                out=out / name,
                passes=passes,
                seeds=seeds,
                baselines=["random", "linear", "vw"],
                config={"height": 6, "learning_rate": 1e-2},
                eval_points=10,
            )
        )
        lines += [f"### {name}: held-out accuracy vs queries ({seeds} seeds, {passes} passes)", ""]
        lines += [*_curve_table(report, "test_accuracy"), ""]
        for learner, entry in report["learners"].items():
            lines.append(
                f"- {learner}: test accuracy {_fmt(entry, 'test_accuracy')}, progressive "
                f"{_fmt(entry, 'progressive_accuracy')}, regret {_fmt(entry, 'regret')}"
            )
        lines += [f"- notices: {report['notices']}", ""]
    return lines


def regression(
    out: Path, *, passes: int, seeds: int, delta: float, learning_rate: float
) -> list[str]:
    lines: list[str] = []
    for name in ("abalone", "cpu_act"):
        common: dict[str, Any] = {
            "data": name,
            "model": "dgt",
            "passes": passes,
            "seeds": seeds,
            "config": {"height": 8, "delta": delta, "learning_rate": learning_rate},
            "eval_points": 10,
        }
        one = simulate(
            SimulationOptions(
                out=out / f"{name}_one_point", feedback="one_point", baselines=["linear"], **common
            )
        )
        lines += [
            f"### {name}: held-out RMSE vs queries, one-point ({seeds} seeds, {passes} passes)",
            "",
        ]
        lines += [*_curve_table(one, "test_rmse"), ""]
        two = simulate(
            SimulationOptions(
                out=out / f"{name}_two_point", feedback="two_point", baselines=["linear"], **common
            )
        )
        dgt, full = two["learners"]["dgt"], two["learners"]["dgt_full_information"]
        lines += [
            f"- one-point final RMSE: dgt {_fmt(one['learners']['dgt'], 'test_rmse')}, "
            f"linear {_fmt(one['learners']['linear'], 'test_rmse')}",
            f"- two-point final RMSE: dgt {_fmt(dgt, 'test_rmse')}, linear "
            f"{_fmt(two['learners']['linear'], 'test_rmse')}; full-information dgt "
            f"{_fmt(full, 'test_rmse')}",
            f"- paper: two-point {PAPER_TWO_POINT_RMSE[name]}, supervised {PAPER_SUPERVISED_RMSE[name]}",
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/figures"))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--classification-passes", type=int, default=2)
    parser.add_argument("--regression-passes", type=int, default=10)
    parser.add_argument(
        "--delta", type=float, default=2.0, help="one/two-point perturbation (target units)"
    )
    parser.add_argument("--regression-learning-rate", type=float, default=1e-3)
    parser.add_argument("--only", choices=("classification", "regression"), default=None)
    args = parser.parse_args()
    lines: list[str] = []
    if args.only != "regression":
        lines += classification(args.out, passes=args.classification_passes, seeds=args.seeds)
    if args.only != "classification":
        lines += regression(
            args.out,
            passes=args.regression_passes,
            seeds=args.seeds,
            delta=args.delta,
            learning_rate=args.regression_learning_rate,
        )
    text = "\n".join(lines)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "figures.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
