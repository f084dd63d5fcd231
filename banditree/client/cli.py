"""``banditree log export``: a model's interaction log from a running service, to a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

if TYPE_CHECKING:
    from banditree.logs.writers import LogFormat

log_app = typer.Typer(help="The interaction log of a served model.", no_args_is_help=True)


@log_app.command("export")
def export_command(
    name: str = typer.Argument(..., help="Model name on the service."),
    out: Path = typer.Option(..., "--out", help="Output file (.parquet, .csv or .ndjson)."),
    fmt: str | None = typer.Option(
        None,
        "--format",
        help=(
            "parquet, csv, ndjson, or dsjson (VW's decision-service JSON, ranking models) "
            "(default: from the file name)."
        ),
    ),
    server: str = typer.Option(
        "http://127.0.0.1:8000", "--server", envvar="BANDITREE_SERVER", help="Service URL."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="BANDITREE_API_KEY", help="API key (Bearer)."
    ),
    since: int | None = typer.Option(None, "--since", help="Rows with offset above this."),
    until: int | None = typer.Option(None, "--until", help="Rows with offset up to this."),
    timeout_seconds: float = typer.Option(60.0, "--timeout-seconds", help="Per-request timeout."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
) -> None:
    """Write the joined log (decision + feedback per row) of model NAME to --out."""
    from banditree.client import BanditreeError, Client
    from banditree.logs import LOG_FORMATS, LogWriter, format_from_path

    if fmt is not None and fmt not in LOG_FORMATS:
        raise typer.BadParameter(f"must be one of {', '.join(LOG_FORMATS)}", param_hint="--format")
    try:
        chosen = fmt or format_from_path(out)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--out") from None
    try:
        from tqdm import tqdm

        bar = tqdm(unit="row", disable=not progress, mininterval=0.5)
    except ModuleNotFoundError:
        bar = None
    try:
        with Client(server, api_key=api_key, timeout_seconds=timeout_seconds) as client:
            with LogWriter(out, cast("LogFormat", chosen)) as writer:  # checked above
                for row in client.export_log(name, since=since, until=until):
                    writer.write([row])
                    if bar is not None:
                        bar.update(1)
    except (BanditreeError, RuntimeError, ValueError) as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    finally:
        if bar is not None:
            bar.close()
    typer.echo(f"{writer.rows_total} rows written to {out}")


def register(app: typer.Typer) -> None:
    """Add the ``log`` command group to ``app``."""
    app.add_typer(log_app, name="log")
