"""``banditree evaluate``: counterfactual evaluation of candidate configurations on a log."""

from __future__ import annotations

from pathlib import Path

import typer


def _fmt(value: float | None, ci: list[float] | None) -> str:
    if value is None or ci is None:
        return "not supported"
    return f"{value:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]"


def evaluate_command(
    log: Path = typer.Argument(
        ...,
        help=(
            "A log: NDJSON, Parquet or CSV export, the simulator's decisions.csv, or DSJson "
            "(.dsjson: a ranking model's export or Personalizer's)."
        ),
    ),
    config: list[Path] = typer.Option(
        ..., "--config", help="A candidate configuration (JSON); repeat for each candidate."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (report.json, evaluate.png)."),
    train_fraction: float = typer.Option(
        0.7, "--train-fraction", help="Leading share of the log the candidates train on."
    ),
    n_bootstrap: int = typer.Option(500, "--n-bootstrap", help="Bootstrap resamples per interval."),
    progressive: str = typer.Option(
        "auto", "--progressive", help="auto, rejection or importance (progressive value method)."
    ),
    min_effective_rounds: float = typer.Option(
        30.0, "--min-effective-rounds", help="Fewer effective rounds: no claim is made."
    ),
    max_weight_share: float = typer.Option(
        0.2, "--max-weight-share", help="One round above this share of the weight: no claim."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap and of rejection sampling."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Estimate what each candidate configuration would have earned on the logged traffic."""
    from simulate.evaluate import EvaluateOptions, evaluate

    try:
        report = evaluate(
            EvaluateOptions(
                log=log,
                configs=list(config),
                out=out,
                train_fraction=train_fraction,
                n_bootstrap=n_bootstrap,
                progressive=progressive,
                min_effective_rounds=min_effective_rounds,
                max_weight_share=max_weight_share,
                seed=seed,
                progress=progress,
            )
        )
    except (ValueError, FileNotFoundError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    logged = report["logged_policy"]
    typer.echo(f"{'logged policy':20s} value {_fmt(logged['value'], logged['value_ci95'])}")
    if report["log"].get("format") == "dsjson":  # a ranking log: policy and greedy estimates
        for name, entry in report["candidates"].items():
            for kind in ("policy", "greedy"):
                parts = [
                    f"{key} {_fmt(entry[kind][key]['value'], entry[kind][key]['value_ci95'])}"
                    for key in ("ips", "snips", "dr")
                ]
                typer.echo(f"{name + ' ' + kind:20s} " + "  ".join(parts))
        typer.echo(f"report: {Path(out) / 'report.json'}")
        return
    for name, entry in report["candidates"].items():
        parts = [
            f"{key} {_fmt(entry[key], entry[f'{key}_ci95'])}"
            for key in ("ips", "snips", "dr", "progressive_value")
        ]
        typer.echo(f"{name:20s} " + "  ".join(parts))
        for reason in entry["refusals"] + entry["progressive_refusals"]:
            typer.echo(f"notice: {name}: {reason}", err=True)
    typer.echo(f"report: {Path(out) / 'report.json'}")


def register(app: typer.Typer) -> None:
    """Add the ``evaluate`` command to ``app``."""
    app.command("evaluate")(evaluate_command)
