"""``banditree simulate``: the simulator's command line (contract: README, "Simulator")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import typer

if TYPE_CHECKING:  # the command's module stays light: ``banditree --help`` imports it
    from simulate.environments import FeedbackMode

MODELS = ("dgt", "dgt_forest", "tel", "hinge", "linear", "boosted")
#: Learner config fields the simulator sets itself: from the data (``task``,
#: ``n_features``, ``n_actions``, the regression target's ``target_offset`` and
#: ``target_scale``), from ``--model``, ``--feedback``, ``--loss``, ``--huber-xi`` and
#: ``--loss-matrix`` (the environment), ``--seeds``; and ``mode`` (no caller's rule to
#: follow).  Every other field is an option.
SIMULATOR_SETS = frozenset(
    {
        "task",
        "kind",
        "n_features",
        "features",
        "n_actions",
        "estimator",
        "loss_matrix",
        "regression_loss",
        "huber_delta",
        "loss_min",
        "loss_max",
        "target_offset",
        "target_scale",
        "seed",
        "mode",
    }
)


def _choice(value: str | None, allowed: tuple[str, ...], option: str) -> str | None:
    if value is not None and value not in allowed:
        raise typer.BadParameter(
            f"must be one of {', '.join(allowed)}; got {value!r}", param_hint=option
        )
    return value


def simulate_command(
    data: str = typer.Argument(
        ...,
        help="A .csv/.tsv (plain or .gz), .parquet or .npz file, a bundled dataset name, or "
        "'obd' (logged).",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="dgt, dgt_forest, tel, hinge, linear or boosted (default: the service's, boosted for "
        "classification, a 4-tree dgt_forest for regression; dgt with --warm-start).",
    ),
    out: Path = typer.Option(
        ..., "--out", help="Output directory (report.json, curves.csv, PNGs)."
    ),
    label: str | None = typer.Option(
        None, "--label", help="Label column (CSV; TSV default 'target')."
    ),
    categorical: str = typer.Option(
        "", "--categorical", help="Comma list of feature columns holding integer-coded categories."
    ),
    schema: Path | None = typer.Option(
        None, "--schema", help='Schema file: {"features": {column: type or spec}, "label": ...}.'
    ),
    task: str = typer.Option(
        "auto",
        "--task",
        help="auto, classification, regression or ranking (a ranking stream of a "
        "classification set's classes as candidates described by features; 'obd': "
        "off-policy estimates on the Open Bandit Dataset).",
    ),
    split: int = typer.Option(0, "--split", help="Split 0..4 of a bundled regression set."),
    feedback: str | None = typer.Option(
        None, "--feedback", help="bandit, one_point, two_point or full."
    ),
    loss: str | None = typer.Option(None, "--loss", help="zero_one, squared or huber."),
    huber_xi: float = typer.Option(1.0, "--huber-xi", help="Huber threshold xi, in target units."),
    loss_matrix: Path | None = typer.Option(
        None, "--loss-matrix", help="K x K loss matrix (.npy or .csv), rows = true class."
    ),
    passes: int = typer.Option(1, "--passes", help="Passes over the train split."),
    rounds: int | None = typer.Option(
        None, "--rounds", help="Number of rounds (overrides passes)."
    ),
    seeds: int = typer.Option(3, "--seeds", help="Number of seeds (0..S-1)."),
    baselines: str = typer.Option(
        "random,linear,vw",
        "--baselines",
        help="Comma list of random, linear, vw (VW's RegCB-opt), vw-epsilon, teucb, tets "
        "('' for none).",
    ),
    explore: float | None = typer.Option(
        None,
        "--explore",
        help="Shorthand for --explorer epsilon_greedy --explorer-parameter E (and vw-epsilon's).",
    ),
    vw_learning_rate: float | None = typer.Option(
        None, "--vw-learning-rate", help="VW -l (default VW's own)."
    ),
    eval_points: int = typer.Option(12, "--eval-points", help="Log-spaced held-out evaluations."),
    log_decisions: bool = typer.Option(
        False, "--log-decisions", help="Write the model's decisions to decisions.csv."
    ),
    server: str | None = typer.Option(None, "--server", help="URL of a running 'banditree serve'."),
    concurrency: int = typer.Option(1, "--concurrency", help="Concurrent requests in HTTP mode."),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="BANDITREE_API_KEY", help="API key for --server."
    ),
    keep_models: bool = typer.Option(
        False,
        "--keep-models",
        help="HTTP mode: leave the models on the service at the end (to look at them in "
        "the console at /ui).",
    ),
    logged: bool = typer.Option(
        False, "--logged", help="DATA is a bandit log: train on it, estimate by IPS/SNIPS/DR."
    ),
    train_fraction: float = typer.Option(
        0.7, "--train-fraction", help="Logged mode: leading share of the log to train on."
    ),
    n_bootstrap: int = typer.Option(
        1000, "--n-bootstrap", help="Logged mode: bootstrap resamples."
    ),
    candidates: int = typer.Option(
        10, "--candidates", min=2, max=256, help="Ranking: candidates offered each round."
    ),
    cold_window: int = typer.Option(
        1000,
        "--cold-window",
        min=1,
        help="Ranking: rounds after held-back classes appear (and after that) in which "
        "cold-start reward is measured.",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    drift: str | None = typer.Option(
        None,
        "--drift",
        help="Classification: the label-to-action map shifts by one at --drift-at (abrupt), "
        "rises to the new map over half as many rounds (gradual), or shifts and comes back "
        "after as many rounds (recurring); the report gives each learner's loss before and "
        "after, its recovery rounds and its worst 500-round mean.",
    ),
    drift_at: int | None = typer.Option(
        None,
        "--drift-at",
        help="Round of the change (default: half the stream; a third recurring).",
    ),
    warm_start: Path | None = typer.Option(
        None,
        "--warm-start",
        help="A 'banditree train' model.safetensors: adds <model>_warm_start, started from it.",
    ),
    config: dict[str, Any] | None = None,
) -> None:
    """Replay DATA through a bandit learner and baselines; write DIR/report.json and plots.

    Each learner configuration field is an option (--height, --learning-rate, ...);
    the simulator sets the task, sizes, estimator, losses and seed from the data.
    """
    config = dict(config or {})
    _choice(model, MODELS, "--model")
    _choice(feedback, ("bandit", "one_point", "two_point", "full"), "--feedback")
    _choice(loss, ("zero_one", "squared", "huber"), "--loss")
    _choice(task, ("auto", "classification", "regression", "ranking"), "--task")
    _choice(drift, ("abrupt", "gradual", "recurring"), "--drift")
    if explore is not None and ("explorer" in config or "explorer_parameter" in config):
        raise typer.BadParameter(
            "give --explore or --explorer/--explorer-parameter, not both", param_hint="--explore"
        )
    try:
        if task == "ranking":
            _ranking(data, model, server, warm_start, logged)
            if explore is not None:
                config.update(explorer="epsilon_greedy", explorer_parameter=explore)
            from simulate.ranking_cli import run_ranking

            run_ranking(
                data=data, out=out, rounds=rounds, candidates=candidates,
                cold_window=cold_window, seeds=seeds,
                baselines=[b.strip() for b in baselines.split(",") if b.strip()],
                config=config, train_fraction=train_fraction, n_bootstrap=n_bootstrap,
                progress=progress,
            )  # fmt: skip
            return
        if logged or data == "obd":
            from simulate.logged import LoggedOptions, evaluate_log

            report = evaluate_log(
                LoggedOptions(
                    data=data,
                    model=model,
                    out=out,
                    passes=passes,
                    seeds=seeds,
                    explore=explore,
                    config=config,
                    train_fraction=train_fraction,
                    n_bootstrap=n_bootstrap,
                    progress=progress,
                )
            )
            typer.echo(json.dumps(report["policies"], indent=2))
            learned = report["policies"][report["model"]]
            if learned.get("refusals"):
                typer.echo("no estimate: " + "; ".join(learned["refusals"]), err=True)
            elif learned.get("interval_note"):
                typer.echo("note: " + learned["interval_note"], err=True)
            return
        from simulate.experiment import SimulationOptions, simulate

        report = simulate(
            SimulationOptions(
                data=data,
                model=model,
                out=out,
                label=label,
                categorical=tuple(c.strip() for c in categorical.split(",") if c.strip()),
                schema=schema,
                task=cast(Literal["auto", "classification", "regression"], task),
                split=split,
                feedback=cast("FeedbackMode | None", feedback),
                loss=loss,
                huber_xi=huber_xi,
                loss_matrix=loss_matrix,
                passes=passes,
                rounds=rounds,
                seeds=seeds,
                baselines=[b.strip() for b in baselines.split(",") if b.strip()],
                explore=explore,
                config=config,
                vw_learning_rate=vw_learning_rate,
                eval_points=eval_points,
                log_decisions=log_decisions,
                server=server,
                concurrency=concurrency,
                api_key=api_key,
                keep_models=keep_models,
                progress=progress,
                warm_start=warm_start,
                drift=drift,
                drift_at=drift_at,
            )
        )
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    for notice in report["notices"]:
        typer.echo(f"notice: {notice}", err=True)
    figure = "test_accuracy" if report["task"] == "classification" else "test_rmse"
    for name, entry in report["learners"].items():
        ci = ", ".join("n/a" if b is None else f"{b:.4f}" for b in entry[f"{figure}_ci95"])
        typer.echo(
            f"{name:28s} {figure} {entry[figure]:.4f}  95% CI [{ci}]  regret {entry['regret']:.4f}"
        )
    for name, fig in report.get("drift", {}).items():
        recovery = "never" if fig["recovery"] is None else f"{fig['recovery']:.0f} rounds"
        left = "never" if fig["left"] is None else f"after {fig['left']:.0f} rounds"
        typer.echo(
            f"{name:28s} {fig['kind']} change at {fig['at']}: loss {fig['pre']:.4f} before, "
            f"{fig['post']:.4f} after, out of the band {left}, recovery {recovery}, "
            f"worst 500-round mean {fig['worst']:.4f}"
        )
    typer.echo(f"report: {Path(out) / 'report.json'}")


def _ranking(
    data: str, model: str | None, server: str | None, warm_start: Path | None, logged: bool
) -> None:
    """Refuse the options a ranking simulation does not take, naming them."""
    for value, option in (
        (model, "--model"),
        (server, "--server"),
        (warm_start, "--warm-start"),
        (logged or None, "--logged"),
    ):
        if value is not None:
            raise typer.BadParameter(
                "not used with --task ranking (the service's ranking model is simulated; "
                "'obd' is the ranking log)",
                param_hint=option,
            )


def register(app: typer.Typer) -> None:
    """Add the ``simulate`` command to ``app``, with an option per learner config field."""
    from banditree.learners.config.options import config_options

    app.command("simulate")(config_options(exclude=SIMULATOR_SETS)(simulate_command))
