"""Command-line options generated from the learner configuration's fields.

:func:`config_options` adds one ``--field-name`` option per field of
:class:`~banditree.learners.config.LearnerConfig` to a typer command: its type, its
bounds (checked when the option is read, the message naming the option) and its help
(the field's description and default) come from the field, so a field added to a
section is an option of every command that uses this at once.  Unset options are not
passed: the config's own default applies.  Scalars are typed options, booleans
``--x/--no-x`` flags, lists of scalars repeat (``--hidden 8 --hidden 8``), anything
else is given as JSON.  The same works for a dataclass (the supervised
``TrainingConfig``): :func:`dataclass_fields`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import types
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union

import typer
from pydantic import BaseModel, TypeAdapter, ValidationError
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
        return types.GenericAlias(list, typing.get_args(inner)), "list"
    return str, "json"


@dataclass(frozen=True)
class FieldSpec:
    """What an option is made from: a field's name, type, default, description, bounds."""

    name: str
    annotation: Any
    default: Any
    description: str
    metadata: tuple[Any, ...] = ()
    panel: str | None = None


def model_fields(model: type[BaseModel], panel: Callable[[str], str | None]) -> list[FieldSpec]:
    """The fields of a pydantic model (``panel``: the help panel of a field name)."""
    return [
        FieldSpec(
            name,
            info.annotation,
            None if info.default is PydanticUndefined else info.default,
            info.description or "",
            tuple(info.metadata),
            panel(name),
        )
        for name, info in model.model_fields.items()
    ]


def dataclass_fields(cls: type[Any], panel: str | None = None) -> list[FieldSpec]:
    """The fields of a dataclass; the description is ``field(metadata={"description": ...})``."""
    hints = typing.get_type_hints(cls)
    return [
        FieldSpec(
            f.name,
            hints[f.name],
            f.default if f.default is not dataclasses.MISSING else None,
            str(f.metadata.get("description", "")),
            (),
            panel,
        )
        for f in dataclasses.fields(cls)
    ]


def learner_config_fields() -> list[FieldSpec]:
    """The learner configuration's fields, each in its section's help panel."""

    def panel(name: str) -> str:
        title = next(t for t, section in SECTIONS.items() if name in section.model_fields)
        return f"Learner configuration: {title}"

    return model_fields(LearnerConfig, panel)


def _help(spec: FieldSpec, spelling: str) -> str:
    text = spec.description
    inner = _without_none(spec.annotation)
    if typing.get_origin(inner) is Literal:
        text += f"; one of {', '.join(map(str, typing.get_args(inner)))}"
    if spec.default not in (None, [], {}, ()):
        text += f" (config default: {spec.default})"
    if spelling == "json":
        text += " (JSON)"
    elif spelling == "list":
        text += " (repeat the option for each item)"
    return text


def _takes_text(annotation: Any) -> bool:
    return str in typing.get_args(annotation) or annotation is str


def _checker(spec: FieldSpec, spelling: str) -> Callable[[Any], Any]:
    """A typer callback: the value checked against the field's type and bounds."""

    def check(value: Any) -> Any:
        if value is None or (spelling == "list" and not value):
            return None
        annotation: Any = spec.annotation
        if spec.metadata:
            annotation = Annotated[annotation, *spec.metadata]
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)  # built when an option is given
        try:
            if spelling == "json":
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    if not _takes_text(spec.annotation):
                        raise
            return adapter.validate_python(list(value) if spelling == "list" else value)
        except json.JSONDecodeError as err:
            raise typer.BadParameter(f"not JSON: {err}", param_hint=flag(spec.name)) from None
        except ValidationError as err:
            message = "; ".join(e["msg"] for e in err.errors(include_url=False))
            raise typer.BadParameter(message, param_hint=flag(spec.name)) from None

    return check


def option_parameters(
    exclude: Collection[str] = (), fields: list[FieldSpec] | None = None
) -> list[inspect.Parameter]:
    """One keyword parameter (a typer option, default None) per field not in ``exclude``.

    ``fields``: the learner configuration's unless given.
    """
    parameters = []
    for spec in learner_config_fields() if fields is None else fields:
        if spec.name in exclude:
            continue
        cli_type, spelling = _cli_type(spec.annotation)
        name = flag(spec.name)
        decls = [f"{name}/--no-{name[2:]}"] if cli_type is bool else [name]
        option = typer.Option(
            None,
            *decls,
            help=_help(spec, spelling),
            callback=_checker(spec, spelling),
            show_default=False,
            rich_help_panel=spec.panel,
        )
        annotation = cli_type | None  # a runtime type: typer reads it
        parameters.append(
            inspect.Parameter(
                spec.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation
            )
        )
    return parameters


def config_options(
    exclude: Collection[str] = (), into: str = "config", fields: list[FieldSpec] | None = None
) -> Callable[[F], F]:
    """Decorate a typer command: one option per config field (but ``exclude``).

    ``fields``: the learner configuration's unless given (:func:`dataclass_fields`,
    :func:`model_fields`).  The command gets the options given on the command line as
    one dict, its parameter ``into`` (field name -> checked value); its other
    parameters are untouched.
    """

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.name != into]
        generated = option_parameters(exclude, fields)
        names = [p.name for p in generated]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = {n: kwargs.pop(n) for n in names if n in kwargs}
            config = {n: v for n, v in given.items() if v is not None}
            return command(*args, **kwargs, **{into: config})

        hints = typing.get_type_hints(command)
        vars(wrapper)["__signature__"] = signature.replace(
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
