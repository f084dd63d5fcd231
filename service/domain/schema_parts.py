"""Building blocks of the request bodies: bounded free-form JSON, one-of alternatives, a
flat body composed of several records."""

from __future__ import annotations

from collections.abc import Callable
from copy import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

#: Deepest nesting of lists and objects inside a model's free-form ``options``.
MAX_OPTIONS_DEPTH = 8


def options_depth(value: Any) -> int:
    """Nesting depth of lists and objects in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_OPTIONS_DEPTH:
            return deepest  # deep enough to refuse: stop walking
        stack.extend((child, depth + 1) for child in children)
    return deepest


def exactly_one_of(data: Any, names: tuple[str, ...]) -> Any:
    """Refuse a body that gives none, several, or a null of the alternatives ``names``."""
    if not isinstance(data, dict):
        return data  # the type error is reported by field validation
    given = [name for name in names if name in data]
    nulls = [name for name in given if data[name] is None]
    if nulls:
        raise ValueError(f"{nulls[0]} must not be null; leave it out instead")
    if len(given) != 1:
        quoted = ", ".join(repr(n) for n in names[:-1]) + f" or {names[-1]!r}"
        raise ValueError(f"give exactly one of {quoted}, got {given}")
    return data


def one_of_schema(names: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    """JSON-schema edit: the alternatives are non-null and exactly one is required."""

    def edit(schema: dict[str, Any]) -> None:
        for name in names:
            prop = schema["properties"][name]
            options = [o for o in prop.pop("anyOf", []) if o.get("type") != "null"]
            if options:
                prop.update(options[0])
            prop.pop("default", None)
        schema["oneOf"] = [{"required": [name]} for name in names]

    return edit


def flat_fields(name: str, *parts: type[BaseModel]) -> type[BaseModel]:
    """A strict model with every field of ``parts`` side by side (bounds, defaults, descriptions).

    A body that stays flat on the wire while its parts stay separate records: a field
    added to a part appears in the body, its schema and its 422 messages at once.
    """
    fields: dict[str, Any] = {
        field: (info.annotation, copy(info))
        for part in parts
        for field, info in part.model_fields.items()
    }
    return create_model(name, __config__=ConfigDict(extra="forbid", strict=True), **fields)
