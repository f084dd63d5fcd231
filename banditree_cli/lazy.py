"""Commands built on first use, so that ``banditree --help`` stays fast.

``simulate`` and ``train`` have one option per configuration field, generated from the
fields: building them imports the configuration (pydantic models).  :func:`defer`
keeps such a command's name, summary and ``register`` function; :class:`LazyCommands`
lists it by its summary and builds it (``register`` on an app of its own) when it is
run or asked for its own help.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

Register = Callable[[typer.Typer], None]
#: name -> (the ``register`` function that adds the command to an app, its summary)
DEFERRED: dict[str, tuple[Register, str]] = {}
#: every command's name in the order it was added, deferred ones included
ORDER: list[str] = []


def add(app: typer.Typer, register: Register) -> None:
    """``register(app)``, remembering the order of the commands it adds."""
    before = len(app.registered_commands)
    register(app)
    for info in app.registered_commands[before:]:
        callback = info.callback.__name__ if info.callback else ""
        ORDER.append(info.name or typer.main.get_command_name(callback))


def defer(name: str, register: Register, command: Callable[..., Any]) -> None:
    """List command ``name`` (summary: ``command``'s docstring); build it when first used."""
    summary = (command.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    DEFERRED[name] = (register, summary)
    ORDER.append(name)


class LazyCommands(TyperGroup):
    """A typer group whose deferred commands are built when used, listed by their summary.

    (``ctx`` is typer's own click context: typer vendors click.)
    """

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        names = [n for n in ORDER if n in self.commands or n in DEFERRED]
        return names + [n for n in self.commands if n not in names]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in DEFERRED:
            return super().get_command(ctx, cmd_name)
        register, summary = DEFERRED[cmd_name]
        if self._listing:  # the group's own help: the summary is all it shows
            return TyperCommand(cmd_name, help=summary)
        app = typer.Typer(add_completion=False)
        register(app)
        command = typer.main.get_command(app)
        command.name = cmd_name
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
