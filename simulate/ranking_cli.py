"""``banditree simulate DATA --task ranking``: the command's ranking branch.

``DATA`` a bundled classification set: a ranking stream (:mod:`simulate.ranking`);
``obd``: off-policy estimates on the Open Bandit Dataset (:mod:`simulate.ranking_obd`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer

#: progressive-stream rounds when ``--rounds`` is not given
DEFAULT_ROUNDS = 4000


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"


def run_ranking(
    *,
    data: str,
    out: Path,
    rounds: int | None,
    candidates: int,
    cold_window: int,
    seeds: int,
    baselines: list[str],
    config: dict[str, Any],
    train_fraction: float,
    n_bootstrap: int,
    progress: bool,
) -> None:
    """Run the ranking simulation (or the OBD estimates), write ``out``, print a summary."""
    if data == "obd":
        _run_obd(out, config, train_fraction, n_bootstrap, "vw" in baselines)
        return
    from simulate.ranking import BASELINES, RankingSimulation, simulate_ranking

    for name in baselines:
        if name not in BASELINES:
            raise typer.BadParameter(
                f"with --task ranking: one of {', '.join(BASELINES)}; got {name!r}",
                param_hint="--baselines",
            )
    report = simulate_ranking(
        RankingSimulation(
            data=data, out=out, rounds=rounds or DEFAULT_ROUNDS, candidates=candidates,
            seeds=seeds, baselines=baselines, config=config, cold_window=cold_window,
            progress=progress,
        )
    )  # fmt: skip
    for notice in report["notices"]:
        typer.echo(f"notice: {notice}", err=True)
    window = report["cold_window"]
    for name, entry in report["learners"].items():
        ci = ", ".join("n/a" if b is None else f"{b:.4f}" for b in entry["loss_ci95"])
        typer.echo(
            f"{name:10s} progressive loss {entry['loss']:.4f}  95% CI [{ci}]  "
            f"cold / seen reward: first {window} rounds {_fmt(entry['cold_reward'])} / "
            f"{_fmt(entry['seen_reward'])}, next {window} {_fmt(entry['cold_reward_after'])} / "
            f"{_fmt(entry['seen_reward_after'])}"
        )
    typer.echo(f"report: {out / 'report.json'}")


def _run_obd(
    out: Path, config: dict[str, Any], train_fraction: float, n_bootstrap: int, vw: bool
) -> None:
    from simulate.ranking import finite_json
    from simulate.ranking_obd import evaluate_obd

    figures = evaluate_obd(
        {**config, "task": "ranking"}, train_fraction=train_fraction,
        n_bootstrap=n_bootstrap, vw=vw,
    )  # fmt: skip
    report = {"task": "ranking", "dataset": "obd_random_all", **figures}
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(finite_json(report), indent=2))
    for notice in figures["notices"]:
        typer.echo(f"notice: {notice}", err=True)
    result = figures["banditree"]
    logged = result["logged_policy"]
    typer.echo(f"logged policy value {logged['value']:.5f}  95% CI {logged['value_ci95']}")
    rows = [(f"ranking {name}", result[name]) for name in ("policy", "greedy")]
    rows += [(name, figures[name]) for name in figures if name.startswith("vw_")]
    for name, estimates in rows:
        for est, cells in estimates.items():
            low, high = cells["value_ci95"]
            typer.echo(f"{name:16s} {est:5s} {cells['value']:.5f}  95% CI [{low:.5f}, {high:.5f}]")
    typer.echo(f"report: {out / 'report.json'}")
