"""Checks of user arrays for the supervised estimators: errors name the field and the bound."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from banditree.core.arrays import FloatArray


def check_features(x: ArrayLike, n_features: int | None = None, field: str = "X") -> FloatArray:
    """A finite float64 ``(n, d)`` copy of ``x``; ``d`` must equal ``n_features`` when given."""
    try:
        arr = np.array(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{field} must be a 2-d array of numbers ({err})") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(
            f"{field} must be a non-empty 2-d array (n, d), got shape {list(arr.shape)}"
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{field} must have {n_features} columns (n_features), got {arr.shape[1]}")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i, j = (int(v) for v in bad[0])
        raise ValueError(f"{field}[{i}, {j}] must be finite, got {arr[i, j]}")
    return arr


def check_targets(y: ArrayLike, n_rows: int, field: str = "y") -> np.ndarray:
    """A 1-d copy of ``y`` with one entry per row of the inputs."""
    arr = np.array(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise ValueError(
            f"{field} must be 1-d with {n_rows} entries (one per row of X), got shape {list(arr.shape)}"
        )
    return arr


def check_regression_targets(y: ArrayLike, n_rows: int, field: str = "y") -> FloatArray:
    """Finite float64 regression targets."""
    arr = check_targets(y, n_rows, field)
    try:
        out = arr.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{field} must hold numbers ({err})") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise ValueError(f"{field}[{int(bad[0])}] must be finite, got {out[bad[0]]}")
    return out
