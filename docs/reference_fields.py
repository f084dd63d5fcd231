"""Reference-table helpers: one Markdown row per field of a pydantic model.

Used by ``docs/gen_reference.py`` (the configuration, the settings and the service
fields); a field's type, default, bounds and description come from the code.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

_BOUNDS = {
    "ge": ">=",
    "gt": ">",
    "le": "<=",
    "lt": "<",
    "min_length": "length >=",
    "max_length": "length <=",
}


def cell(text: object) -> str:
    """Text fit for one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def type_name(annotation: Any) -> str:
    """``int | None``, ``list[int]``, ``"a" | "b"`` for a field's annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is not None:
        inner = ", ".join(type_name(a).strip("`") for a in args)
        return f"`{getattr(origin, '__name__', str(origin))}[{inner}]`"
    if annotation is type(None):
        return "`null`"
    return f"`{getattr(annotation, '__name__', str(annotation))}`"


def default_text(field: FieldInfo) -> str:
    """The default as JSON would spell it; a computed default says so."""
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:  # a factory of the other fields: see the description
            return "computed"
        return f"`{value!r}`"
    if field.default is PydanticUndefined:
        return "**required**"
    if field.default is None:
        return "`null`"
    if isinstance(field.default, bool):
        return f"`{str(field.default).lower()}`"
    if isinstance(field.default, str):
        return f'`"{field.default}"`'
    return f"`{field.default}`"


def bounds_text(field: FieldInfo) -> str:
    """``>= 1, <= 10000`` from the field's constraints."""
    found = []
    for item in field.metadata:
        for attribute, symbol in _BOUNDS.items():
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(
                    f"{symbol} {value:,}" if isinstance(value, int) else f"{symbol} {value}"
                )
    return ", ".join(found)


def field_rows(model: type[BaseModel], skip: Iterable[str] = ()) -> list[str]:
    """One table row per field of ``model`` (a field that is itself a model: its rows, dotted)."""
    rows = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += [row.replace("| `", f"| `{name}.", 1) for row in field_rows(annotation)]
            continue
        rows.append(
            f"| `{name}` | {type_name(annotation)} | {default_text(field)} | "
            f"{cell(bounds_text(field))} | {cell(field.description or '')} |"
        )
    return rows


TABLE_HEAD = "| field | type | default | bounds | meaning |\n|---|---|---|---|---|\n"
