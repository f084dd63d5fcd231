"""A model's named, typed features: the schema, context flattening and schema inference.

A context is a JSON object of named features, optionally in namespaces
(``{"user": {"age": 31}, "device": {"os": "ios"}}`` is ``user.age`` and ``device.os``).
Each feature is one of

* ``numeric``: a number;
* ``boolean``: true / false (also 0 / 1 and the strings ``true``, ``false``, ``yes``,
  ``no``, ``1``, ``0`` that data files hold);
* ``categorical``: a string, or an integer code declared categorical (``3`` and ``"3"``
  are the same category);
* ``tags``: a list of categories (any number of them at once).

Any feature may be missing (absent, ``null``, or NaN in a data file): never an error,
it sets the feature's missing column.  Names the schema does not know are ignored.

Inference rule (a model created without a schema, :func:`infer_schema`): the types
of the first context's values: number -> numeric, bool -> boolean, string ->
categorical, list -> tags, object -> namespace; a null value names no feature.  Every
categorical / tags feature gets :data:`DEFAULT_MAX_CATEGORIES` vocabulary slots.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from banditree.features.errors import InvalidInput

FeatureType = Literal["numeric", "boolean", "categorical", "tags"]
#: vocabulary slots of a categorical or tags feature that does not declare its own
DEFAULT_MAX_CATEGORIES = 32
#: most vocabulary slots one feature may reserve
MAX_CATEGORIES = 1024
#: longest category string (characters) a context may send
MAX_STRING_LENGTH = 256
#: most tags in one tags value
MAX_TAGS = 256
#: most features a schema may declare, and most leaf values a context may hold
MAX_FEATURES = 2048
#: deepest namespace nesting of a context
MAX_DEPTH = 4


class FeatureSpec(BaseModel):
    """One feature: its type, and for categories the vocabulary bound.

    ``values`` declares the categories up front (their columns, in this order; other
    values go to the "other" column); otherwise up to ``max_categories`` values get a
    column each as the learner meets them.  ``missing`` reserves a column set when the
    feature is missing (off: a missing category sets no column and a missing number is
    imputed without an indicator).
    """

    model_config = ConfigDict(extra="forbid")

    type: FeatureType
    max_categories: int | None = Field(None, ge=1, le=MAX_CATEGORIES)
    values: list[str] | None = Field(None, max_length=MAX_CATEGORIES)
    missing: bool = True

    @model_validator(mode="after")
    def _check(self) -> FeatureSpec:
        if self.type in ("numeric", "boolean"):
            if self.max_categories is not None or self.values is not None:
                raise ValueError(f"a {self.type} feature takes no max_categories or values")
        elif self.values is not None:
            if len(set(self.values)) != len(self.values):
                raise ValueError("values must be distinct")
            if any(len(v) > MAX_STRING_LENGTH for v in self.values):
                raise ValueError(f"values must be at most {MAX_STRING_LENGTH} characters")
        return self

    @property
    def slots(self) -> int:
        """Vocabulary columns of a categorical / tags feature (0 for the others)."""
        if self.type in ("numeric", "boolean"):
            return 0
        if self.values is not None:
            return len(self.values)
        return self.max_categories or DEFAULT_MAX_CATEGORIES

    @property
    def width(self) -> int:
        """Columns of this feature in the encoded vector."""
        if self.type in ("numeric", "boolean"):
            return 1 + int(self.missing)
        return self.slots + 1 + int(self.missing)  # slots, other, missing


class FeatureSchema(BaseModel):
    """Named features in column order (``features``), flattened names (``user.age``)."""

    model_config = ConfigDict(extra="forbid")

    features: dict[str, FeatureSpec] = Field(..., min_length=1, max_length=MAX_FEATURES)
    min_count: int = Field(
        1, ge=1, le=1_000_000, description="sightings before a category gets its column"
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """Accept ``{"age": "numeric"}`` and nested namespaces as well as full specs."""
        if isinstance(data, Mapping) and "features" not in data:
            data = {"features": data}
        if isinstance(data, Mapping) and isinstance(data.get("features"), list):
            # the stored form: a list keeps the column order through sorted-key JSON
            listed: list[Any] = data["features"]
            if not all(isinstance(item, Mapping) and "name" in item for item in listed):
                raise ValueError("a features list holds objects with a name and a type")
            specs = {
                item["name"]: {k: v for k, v in item.items() if k != "name"} for item in listed
            }
            if len(specs) != len(listed):
                raise ValueError("feature names must be distinct")
            data = {**data, "features": specs}
        if isinstance(data, Mapping) and isinstance(data.get("features"), Mapping):
            data = {**data, "features": _flat_specs(data["features"])}
        return data

    @property
    def width(self) -> int:
        """Columns of the encoded vector (the tree's input width)."""
        return sum(spec.width for spec in self.features.values())

    def to_json(self) -> dict[str, Any]:
        """The JSON form this schema validates back from (features as a list, in column
        order, so that JSON with sorted keys keeps the order)."""
        return {
            "features": [
                {"name": name, **spec.model_dump(mode="json", exclude_none=True)}
                for name, spec in self.features.items()
            ],
            "min_count": self.min_count,
        }


def _flat_specs(specs: Mapping[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Declared specs with namespaces (an object without ``type``) flattened to dotted names."""
    if depth > MAX_DEPTH:
        raise ValueError(f"features nest deeper than {MAX_DEPTH} namespaces")
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        full = f"{prefix}{name}"
        if isinstance(spec, str):
            out[full] = {"type": spec}
        elif isinstance(spec, Mapping) and "type" not in spec:
            out.update(_flat_specs(spec, f"{full}.", depth + 1))
        else:
            out[full] = spec
    return out


def flatten_context(context: Mapping[str, Any], field: str = "context") -> Mapping[str, Any]:
    """A JSON context with its namespaces flattened: ``{"user": {"age": 3}}`` -> ``user.age``.

    A context with no namespace is returned as it is (not copied: do not change it).

    Raises :class:`InvalidInput` naming the field for a context too deep or with more
    than :data:`MAX_FEATURES` values.
    """
    if len(context) <= MAX_FEATURES:  # flat already (the common case): read as it is
        for name, value in context.items():
            if type(name) is not str or isinstance(value, dict):
                break
        else:
            return context
    out: dict[str, Any] = {}
    stack: list[tuple[Mapping[str, Any], str, int]] = [(context, "", 0)]
    while stack:
        obj, prefix, depth = stack.pop()
        for name, value in obj.items():
            if not isinstance(name, str):
                raise InvalidInput(field, "feature names must be strings")
            full = f"{prefix}{name}"
            if isinstance(value, Mapping):
                if depth >= MAX_DEPTH:
                    raise InvalidInput(f"{field}.{full}", f"nests deeper than {MAX_DEPTH}")
                stack.append((value, f"{full}.", depth + 1))
                continue
            out[full] = value
            if len(out) > MAX_FEATURES:
                raise InvalidInput(field, f"must hold at most {MAX_FEATURES} features")
    return out


def _infer_type(value: Any) -> FeatureType | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "numeric"
    if isinstance(value, str):
        return "categorical"
    if isinstance(value, list | tuple):
        return "tags"
    return None


def infer_schema(
    contexts: Iterable[Mapping[str, Any]], max_categories: int = DEFAULT_MAX_CATEGORIES
) -> FeatureSchema:
    """The schema of the module docstring's inference rule, from one or more contexts.

    A feature's type is that of its first non-null value; features are in order of
    first appearance.  Raises :class:`InvalidInput` when no context names a feature.
    """
    types: dict[str, FeatureType] = {}
    for context in contexts:
        for name, value in flatten_context(context).items():
            kind = _infer_type(value)
            if kind is not None and name not in types:
                types[name] = kind
    if not types:
        raise InvalidInput("context", "names no feature with a value: cannot infer a schema")
    specs = {
        name: {"type": kind, "max_categories": max_categories}
        if kind in ("categorical", "tags")
        else {"type": kind}
        for name, kind in types.items()
    }
    return FeatureSchema.model_validate({"features": specs})
