"""The ``banditree`` console command: the library's, the service's and the simulator's
sub-commands composed into one app.

It sits outside the library (``banditree`` knows nothing of the service or the
simulator); each package adds its commands through its own ``register(app)``.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from banditree import __version__
from banditree.client.cli import register as register_client
from banditree.import_command import register as register_import
from banditree.supervised.command import register as register_train

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


def _optional(package: str) -> list[Callable[[typer.Typer], None]]:
    """The ``register`` functions of ``package`` (service, simulate), none when absent."""
    try:
        if package == "service":
            from service.cli import register as serve

            return [serve]
        from simulate.cli import register as simulate
        from simulate.evaluate_cli import register as evaluate

        return [simulate, evaluate]
    except ModuleNotFoundError as err:  # the service image ships without the simulator
        if err.name != package:
            raise
        return []


_service, _simulate = _optional("service"), _optional("simulate")
for _register in [
    *_service,
    *_simulate[:1],
    register_train,
    register_import,
    *_simulate[1:],
    register_client,
]:
    _register(app)

__all__ = ["app"]
