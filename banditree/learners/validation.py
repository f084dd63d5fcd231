"""Input checks shared by every learner: clear messages naming the field and the bound."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.columns import ArrayRows
from banditree.features.errors import InvalidInput

__all__ = ["InvalidInput", "as_context", "as_contexts", "check_loss", "context_values"]


def as_context(
    context: Sequence[float] | FloatArray | Mapping[str, Any],
    n_features: int,
    field: str = "context",
) -> FloatArray:
    """A fresh float64 copy of ``context``; raises :class:`InvalidInput` on a bad one."""
    return context_values(context, n_features, field)[0]


def context_values(
    context: Sequence[float] | FloatArray | Mapping[str, Any],
    n_features: int,
    field: str = "context",
) -> tuple[FloatArray, list[float]]:
    """:func:`as_context` and the same numbers as Python floats (what a decision records)."""
    x = _context_array(context, n_features, field)
    values: list[float] = x.tolist()
    if not math.isfinite(sum(values)):  # cheap: a sum is finite when every term is
        _refuse_non_finite(x, field)
    return x, values


def _context_array(
    context: Sequence[float] | FloatArray | Mapping[str, Any], n_features: int, field: str
) -> FloatArray:
    try:
        x = np.array(context, dtype=np.float64)
    except (TypeError, ValueError) as err:
        if isinstance(context, Mapping):
            raise _named_refused(field, n_features) from None
        raise InvalidInput(field, f"must be a list of {n_features} numbers ({err})") from None
    if x.ndim != 1 or x.shape[0] != n_features:
        if isinstance(context, Mapping):
            raise _named_refused(field, n_features)
        raise InvalidInput(
            field, f"must hold exactly {n_features} numbers, got shape {list(x.shape)}"
        )
    return x


def _named_refused(field: str, n_features: int) -> InvalidInput:
    """The refusal of an object of named features sent to a model of float lists."""
    return InvalidInput(
        field,
        f"must be a list of {n_features} numbers: this model was created with n_features; "
        "a model created with features (or with neither, to infer them) takes objects of "
        "named features",
    )


def _refuse_non_finite(x: FloatArray, field: str) -> None:
    """Name the first non-finite entry of ``x`` (none: finite numbers whose sum overflowed)."""
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        raise InvalidInput(f"{field}[{int(bad[0])}]", f"must be finite, got {x[bad[0]]}")


def as_contexts(
    contexts: Sequence[Sequence[float]] | FloatArray, n_features: int, field: str = "contexts"
) -> FloatArray:
    """A fresh float64 ``(B, n_features)`` copy of ``contexts``; :class:`InvalidInput` on a bad one.

    An empty list is a batch of zero contexts.  :class:`ArrayRows` give their own array
    (made for their batch alone, finite) when its width is ``n_features``.
    """
    if type(contexts) is ArrayRows and contexts.array.shape[1] == n_features:
        array: FloatArray = contexts.array
        return array
    try:
        x = np.array(contexts, dtype=np.float64)
    except (TypeError, ValueError) as err:
        for i, row in enumerate(contexts):  # name the ragged row when there is one
            if isinstance(row, Mapping):
                raise _named_refused(f"{field}[{i}]", n_features) from None
            if not isinstance(row, (str, bytes)) and hasattr(row, "__len__"):
                if len(row) != n_features:
                    raise InvalidInput(
                        f"{field}[{i}]", f"must hold exactly {n_features} numbers, got {len(row)}"
                    ) from None
        raise InvalidInput(
            field, f"must be a list of lists of exactly {n_features} numbers ({err})"
        ) from None
    if x.ndim == 1 and x.size == 0:
        return x.reshape(0, n_features)
    if x.ndim != 2 or x.shape[1] != n_features:
        raise InvalidInput(
            field,
            f"must be a list of contexts of exactly {n_features} numbers, got shape {list(x.shape)}",
        )
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf, 1e308 + 1e308: refused below
        total = float(np.add.reduce(x, None))
    if not math.isfinite(total):
        bad = np.argwhere(~np.isfinite(x))
        if bad.size:
            row, col = (int(v) for v in bad[0])
            raise InvalidInput(f"{field}[{row}][{col}]", f"must be finite, got {x[row, col]}")
    return x


def check_loss(value: float, bounds: tuple[float, float] | None, field: str = "loss") -> float:
    """A finite loss inside the declared bounds."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidInput(field, f"must be a finite number, got {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise InvalidInput(field, f"must be in [{bounds[0]}, {bounds[1]}], got {value}")
    return float(value)
