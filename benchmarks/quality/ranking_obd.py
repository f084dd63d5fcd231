"""Open Bandit Dataset as a ranking log: the ranking default's off-policy value, beside VW's.

One command::

    python -m benchmarks.quality.ranking_obd [--train-fraction 0.7] [--n-bootstrap 1000] [--out FILE]

The log and the estimates: :mod:`simulate.ranking_obd` (the ranking default,
``{"task": "ranking"}``, trained on the first 70% in time order; IPS, SNIPS and DR of its
policy and its greedy choice on the last 30%, with bootstrap 95% intervals, beside the
logged policy's value and VW's ``--cb_explore_adf``, epsilon-greedy and ``--squarecb``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from simulate.ranking_obd import VW_CONFIGS, evaluate_obd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-fraction", type=float, default=0.7)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    figures = evaluate_obd({}, train_fraction=args.train_fraction, n_bootstrap=args.n_bootstrap)
    result = figures["banditree"]
    print_figures(figures)
    if args.out is not None:
        out: dict[str, Any] = {"banditree_default": result}
        out.update({name: figures[name] for name in VW_CONFIGS if name in figures})
        args.out.write_text(json.dumps(out, indent=2))


def print_figures(figures: dict[str, Any]) -> None:
    """The estimates, one line each."""
    result = figures["banditree"]
    logged = result["logged_policy"]
    print(f"OBD uniform-random sample: train {result['n_train']}, "
          f"evaluate {result['n_evaluation']}")  # fmt: skip
    print(f"logged policy value {logged['value']:.5f} {logged['value_ci95']}")
    for name in ("policy", "greedy"):
        for est, cells in result[name].items():
            print(
                f"banditree default {name:6s} {est:5s} {cells['value']:.5f} {cells['value_ci95']}"
            )
    for name in VW_CONFIGS:
        for est, cells in figures.get(name, {}).items():
            print(f"{name:24s} {est:5s} {cells['value']:.5f} {cells['value_ci95']}")
    for notice in figures.get("notices", []):
        print(f"notice: {notice}")


if __name__ == "__main__":
    main()
