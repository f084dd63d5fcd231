"""``banditree train``: the paper's supervised protocol from the command line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

if TYPE_CHECKING:
    from banditree.datasets.sources import TaskChoice

from banditree import __version__

#: TrainingConfig fields the protocol holds itself (one value for every grid run)
PROTOCOL_FIELDS = ("height", "epochs", "seed", "device", "progress")
#: ``--grid`` by default: Table 11's L = 1 runs.  The full grid's 15 L = 3 runs cost
#: 25-70x an L = 1 run each (35-40 min on a 10,000-row set on 2 cores) and did not
#: win on the sets measured (``benchmarks/quality/train_grid``); ``--grid paper`` keeps them.
DEFAULT_GRID = "paper-l1"


def available_cores() -> int:
    """CPU cores this process may run on (``--jobs 0``)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def train_command(
    data: str = typer.Argument(
        ..., help="A .tsv.gz/.tsv/.csv/.npz file or a bundled dataset name (as for simulate)."
    ),
    out: Path = typer.Option(..., "--out", help="Output directory (model, report, loss plot)."),
    task: str = typer.Option("auto", "--task", help="auto, classification or regression."),
    label: str | None = typer.Option(None, "--label", help="Label column (CSV; TSV 'target')."),
    categorical: str = typer.Option(
        "", "--categorical", help="Comma list of feature columns holding integer-coded categories."
    ),
    schema: Path | None = typer.Option(
        None, "--schema", help='Schema file: {"features": {column: type or spec}, "label": ...}.'
    ),
    split: int = typer.Option(0, "--split", help="Split 0..4 of a bundled regression set."),
    grid: str = typer.Option(
        DEFAULT_GRID,
        "--grid",
        help="paper-l1 (Table 11's L = 1 runs: minutes), paper (all of Table 11, with the "
        "L = 3 runs: 30-60x longer), none, or a JSON file.",
    ),
    validation_fraction: float = typer.Option(
        0.2, "--validation-fraction", help="Share of the train split held out for the grid."
    ),
    threads: int = typer.Option(
        1, "--threads", help="Torch CPU threads (1 is fastest at batch 128; more helps L = 3)."
    ),
    jobs: int = typer.Option(
        0,
        "--jobs",
        help="Grid runs trained at once, in worker processes; 0: one per CPU core available.",
    ),
    config: dict[str, Any] | None = None,
) -> None:
    """Train a DGT on DATA (grid search on a validation split); write model, report, loss plot.

    Each training setting is an option (--height, --learning-rate, --momentum, ...);
    the grid's settings override them for its runs.
    """
    config = dict(config or {})
    protocol = {k: config.pop(k) for k in PROTOCOL_FIELDS if k in config}
    seed = int(protocol.get("seed", 0))
    import torch

    from banditree.supervised.grid import load_grid
    from banditree.supervised.loss_plot import plot_losses
    from banditree.supervised.protocol import ProtocolOptions, run_protocol
    from banditree.supervised.trainer import resolve_device

    if task not in ("auto", "classification", "regression"):
        raise typer.BadParameter(
            f"must be auto, classification or regression; got {task!r}", param_hint="--task"
        )
    if threads < 1:
        raise typer.BadParameter(f"must be >= 1, got {threads}", param_hint="--threads")
    if jobs < 0:
        raise typer.BadParameter(f"must be >= 0, got {jobs}", param_hint="--jobs")
    jobs = jobs or available_cores()
    try:
        resolve_device(protocol.get("device", "cpu"))
        declared = tuple(c.strip() for c in categorical.split(",") if c.strip())
        ds, encoder = _load(data, label, task, seed, split, declared, schema)
        settings = load_grid(grid, ds.task)
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            result = run_protocol(
                ds,
                ProtocolOptions(
                    **protocol,
                    grid=settings,
                    validation_fraction=validation_fraction,
                    base=config,
                    jobs=jobs,
                ),
            )
        finally:
            torch.set_num_threads(previous)
    except (ValueError, FloatingPointError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    out.mkdir(parents=True, exist_ok=True)
    model = result.model
    if encoder is not None:  # named features: the file carries the schema and the encoder
        model = replace(model, features=ds.schema, encoder=encoder)
    model.save(out / "model.safetensors")
    plot_losses(result, out / "loss.png")
    report = {
        **result.report,
        "options": {
            "data": data,
            "grid": grid,
            "threads": threads,
            "jobs": jobs,
            "task": task,
            "split": split,
            "categorical": categorical or None,
            "schema": str(schema) if schema is not None else None,
        },
        "features": ds.schema,
        "banditree_version": __version__,
        "files": ["model.safetensors", "report.json", "loss.png"],
    }
    (out / "report.json").write_text(json.dumps(report, indent=2))
    figure = "accuracy" if ds.task == "classification" else "rmse"
    typer.echo(
        f"{ds.name}: chosen {report['chosen']['settings'] or 'defaults'}; "
        f"validation {figure} {report[f'validation_{figure}']:.4f}, "
        f"test {figure} {report[f'test_{figure}']:.4f} ({report['seconds']:.1f} s)"
    )
    typer.echo(f"model: {out / 'model.safetensors'}")


def _load(
    data: str,
    label: str | None,
    task: str,
    seed: int,
    split: int,
    categorical: tuple[str, ...] = (),
    schema: Path | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """The dataset, and None; one with a feature schema as its encoded columns (one-hot
    categories), and the state of the encoder that made them (JSON)."""
    from banditree.datasets.sources import load_source
    from banditree.datasets.tables import encoded, encoder_json, fitted_encoder, training_sized

    ds = load_source(
        data,
        label=label,
        task=cast("TaskChoice", task),  # one of its values: the command checked it
        seed=seed,
        split=split,
        categorical=categorical,
        schema=schema,
    )
    if ds.schema is None:
        return ds, None
    ds = training_sized(ds)  # offline, every training value can have its column
    encoder = fitted_encoder(ds)
    return encoded(ds, encoder), encoder_json(encoder)


def register(app: typer.Typer) -> None:
    """Add the ``train`` command to ``app``, with an option per ``TrainingConfig`` field."""
    from banditree.learners.config.options import config_options, dataclass_fields
    from banditree.supervised.config import TrainingConfig

    fields = dataclass_fields(TrainingConfig, panel="Training")
    app.command("train")(config_options(fields=fields)(train_command))
