"""The ``banditree`` console command: the library's, the service's and the simulator's
sub-commands composed into one app.

It sits outside the library (``banditree`` knows nothing of the service or the
simulator); each package adds its commands through its own ``register(app)``.
``simulate`` and ``train`` are built on first use (:mod:`banditree_cli.lazy`).
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from banditree import __version__
from banditree.client.cli import register as register_client
from banditree.import_command import register as register_import
from banditree.supervised.command import register as register_train
from banditree.supervised.command import train_command
from banditree_cli.lazy import LazyCommands, add, defer

app = typer.Typer(
    cls=LazyCommands,
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


def _simulator() -> list[Callable[[typer.Typer], None]]:
    """The simulator's ``simulate`` (deferred) and ``evaluate``; none when it is absent."""
    try:
        from simulate.cli import register as simulate
        from simulate.cli import simulate_command
        from simulate.evaluate_cli import register as evaluate
    except ModuleNotFoundError as err:  # the service image ships without the simulator
        if err.name != "simulate":
            raise
        return []
    defer("simulate", simulate, simulate_command)
    return [evaluate]


def _service() -> list[Callable[[typer.Typer], None]]:
    """The service's commands; none when it is absent."""
    try:
        from service.cli import register as serve
    except ModuleNotFoundError as err:
        if err.name != "service":
            raise
        return []
    return [serve]


for _register in _service():
    add(app, _register)
_evaluate = _simulator()
defer("train", register_train, train_command)
for _register in [register_import, *_evaluate, register_client]:
    add(app, _register)

__all__ = ["app"]
