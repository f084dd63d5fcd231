"""Schemas and contexts from tables (data files read as columns).

The inference rule for a table (``simulate``, ``train``, ``evaluate`` and the
benchmarks): a column declared categorical (a ``NAME.features.json`` or
``--categorical``) is categorical; otherwise a boolean column is boolean, a numeric
column numeric, and a column of strings boolean when every value is a boolean word
(``true``/``false``/``yes``/``no``), else categorical.  A categorical column declares
its vocabulary from the rows given: its most frequent values (ties in sorted order),
at most ``max_categories``; the rest, and values never seen, share the "other"
column.  A column with a missing cell (empty, NaN, None) gets a missing column.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from banditree.features.encoder import category_key
from banditree.features.schema import FeatureSchema

#: vocabulary bound of a table's categorical column
TABLE_MAX_CATEGORIES = 32
_BOOLEAN_WORDS = {"true", "false", "yes", "no"}


def is_missing(value: Any) -> bool:
    """None, NaN or an empty string."""
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and value == "")
    )


def _column_type(values: Sequence[Any], declared: str | None) -> str:
    if declared in ("categorical", "boolean", "numeric", "tags"):
        return declared
    present = [v for v in values if not is_missing(v)]
    if present and all(isinstance(v, bool | np.bool_) for v in present):
        return "boolean"
    if all(isinstance(v, int | float | np.integer | np.floating) for v in present):
        return "numeric"
    if present and all(isinstance(v, str) and v.lower() in _BOOLEAN_WORDS for v in present):
        return "boolean"
    return "categorical"


def schema_from_columns(
    columns: Mapping[str, Sequence[Any] | np.ndarray],
    types: Mapping[str, str] | None = None,
    categorical: Iterable[str] = (),
    max_categories: int = TABLE_MAX_CATEGORIES,
) -> FeatureSchema:
    """The schema of the module docstring's rule for named columns.

    ``types`` (``{column: "categorical" | "numeric" | ...}``, a features file) and
    ``categorical`` (names) declare types; declared names missing from ``columns``
    are refused with :class:`ValueError`.
    """
    declared = dict(types or {})
    for name in categorical:
        declared[name] = "categorical"
    unknown = sorted(set(declared) - set(columns))
    if unknown:
        raise ValueError(f"declared columns not in the data: {', '.join(unknown[:5])}")
    specs: dict[str, dict[str, Any]] = {}
    for name, raw in columns.items():
        values = raw.tolist() if isinstance(raw, np.ndarray) else list(raw)
        kind = _column_type(values, declared.get(name))
        missing = any(is_missing(v) for v in values)
        spec: dict[str, Any] = {"type": kind, "missing": missing}
        if kind == "categorical":
            counts = Counter(category_key(v, name) for v in values if not is_missing(v))
            ranked = sorted(counts, key=lambda k: (-counts[k], k))[:max_categories]
            spec["values"] = ranked or ["?"]
        specs[name] = spec
    return FeatureSchema.model_validate({"features": specs})


def row_contexts(
    names: Sequence[str], rows: np.ndarray | Sequence[Sequence[Any]]
) -> list[dict[str, Any]]:
    """One JSON context per row (missing cells as None)."""
    out = []
    for row in rows.tolist() if isinstance(rows, np.ndarray) else rows:
        out.append({name: None if is_missing(v) else v for name, v in zip(names, row, strict=True)})
    return out
