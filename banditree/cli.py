"""The ``banditree`` console command. Sub-commands register themselves here."""

from __future__ import annotations

import typer

from banditree import __version__

app = typer.Typer(
    name="banditree",
    help="Online contextual bandits on hard oblique trees trained by gradient.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"banditree {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Online contextual bandits on hard oblique trees trained by gradient."""


def _register_subcommands() -> None:
    """Attach the sub-commands (serve, simulate, train) when their packages are present."""
    import importlib

    for module in (
        "service.cli",
        "simulate.cli",
        "banditree.supervised.command",
        "banditree.import_command",
        "simulate.evaluate_cli",
        "banditree.client.cli",
    ):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name and module.startswith(err.name):
                continue
            raise
        mod.register(app)


_register_subcommands()

if __name__ == "__main__":
    app()
