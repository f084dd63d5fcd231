"""Command-line options generated from the learner configuration's fields.

:func:`config_options` adds one ``--field-name`` option per field of
:class:`~banditree.learners.config.LearnerConfig` to a typer command: its type, its
bounds (checked when the option is read, the message naming the option) and its help
(the field's description and default) come from the field, so a field added to a
section is an option of every command that uses this at once.  Unset options are not
passed: the config's own default applies.  Scalars are typed options, booleans
``--x/--no-x`` flags, lists of scalars repeat (``--hidden 8 --hidden 8``), anything
else is given as JSON.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Collection
from typing import Annotated, Any, Literal, TypeVar, Union

import typer
from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from banditree.learners.config.learner_config import SECTIONS, LearnerConfig

F = TypeVar("F", bound=Callable[..., Any])
SCALARS = (bool, int, float, str)


def flag(name: str) -> str:
    """The option of field ``name``: ``learning_rate`` -> ``--learning-rate``."""
    return "--" + name.replace("_", "-")


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _cli_type(annotation: Any) -> tuple[Any, str]:
    """The type typer parses for a field and how the value is spelled (``scalar``/``list``/``json``)."""
    inner = _without_none(annotation)
    if typing.get_origin(inner) is Literal:
        return str, "scalar"
    if inner in SCALARS:
        return inner, "scalar"
    if typing.get_origin(inner) is list and typing.get_args(inner)[0] in SCALARS:
        return list[typing.get_args(inner)[0]], "list"  # type: ignore[misc]
    return str, "json"


def _help(info: FieldInfo, spelling: str) -> str:
    text = info.description or ""
    inner = _without_none(info.annotation)
    if typing.get_origin(inner) is Literal:
        text += f"; one of {', '.join(map(str, typing.get_args(inner)))}"
    if info.default is not PydanticUndefined and info.default not in (None, [], {}):
        text += f" (config default: {info.default})"
    if spelling == "json":
        text += " (JSON)"
    elif spelling == "list":
        text += " (repeat the option for each item)"
    return text


def _checker(name: str, info: FieldInfo, spelling: str) -> Callable[[Any], Any]:
    """A typer callback: the value checked against the field's type and bounds."""

    def check(value: Any) -> Any:
        if value is None or (spelling == "list" and not value):
            return None
        annotation: Any = info.annotation
        if info.metadata:
            annotation = Annotated[annotation, *info.metadata]
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)  # built when an option is given
        try:
            if spelling == "json":
                value = json.loads(value)
            return adapter.validate_python(list(value) if spelling == "list" else value)
        except json.JSONDecodeError as err:
            raise typer.BadParameter(f"not JSON: {err}", param_hint=flag(name)) from None
        except ValidationError as err:
            message = "; ".join(e["msg"] for e in err.errors(include_url=False))
            raise typer.BadParameter(message, param_hint=flag(name)) from None

    return check


def _section_of(name: str) -> str:
    return next(title for title, section in SECTIONS.items() if name in section.model_fields)


def option_parameters(exclude: Collection[str] = ()) -> list[inspect.Parameter]:
    """One keyword parameter (a typer option, default None) per config field not in ``exclude``."""
    parameters = []
    for name, info in LearnerConfig.model_fields.items():
        if name in exclude:
            continue
        cli_type, spelling = _cli_type(info.annotation)
        decls = [f"{flag(name)}/--no-{flag(name)[2:]}"] if cli_type is bool else [flag(name)]
        option = typer.Option(
            None,
            *decls,
            help=_help(info, spelling),
            callback=_checker(name, info, spelling),
            show_default=False,
            rich_help_panel=f"Learner configuration: {_section_of(name)}",
        )
        annotation = cli_type | None  # a runtime type: typer reads it
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation
            )
        )
    return parameters


def config_options(exclude: Collection[str] = (), into: str = "config") -> Callable[[F], F]:
    """Decorate a typer command: one option per config field (but ``exclude``).

    The command gets the options given on the command line as one dict, its parameter
    ``into`` (field name -> checked value); its other parameters are untouched.
    """

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.name != into]
        generated = option_parameters(exclude)
        names = [p.name for p in generated]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = {n: kwargs.pop(n) for n in names if n in kwargs}
            config = {n: v for n, v in given.items() if v is not None}
            return command(*args, **kwargs, **{into: config})

        hints = typing.get_type_hints(command)
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(annotation=hints.get(p.name, p.annotation)) for p in own]
            + generated
        )
        wrapper.__annotations__ = {
            **{p.name: hints[p.name] for p in own if p.name in hints},
            **{p.name: p.annotation for p in generated},
            "return": hints.get("return", None),
        }
        return typing.cast(F, wrapper)

    return decorate
