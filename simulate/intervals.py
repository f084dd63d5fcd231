"""Confidence intervals over seeds (Student t) for the report's figures."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def t_interval(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Student-t interval of the mean of ``values`` (one value per seed).

    With a single value the interval is undefined and both bounds are NaN (written
    as ``null`` in ``report.json``).

    Examples
    --------
    >>> low, high = t_interval([1.0, 2.0, 3.0])
    >>> round(low, 3), round(high, 3)
    (-0.484, 4.484)
    """
    from scipy.stats import t

    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return (math.nan, math.nan)
    mean = float(x.mean())
    half = float(t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return (mean - half, mean + half)


def summarise(values: Sequence[float] | np.ndarray) -> tuple[float, list[float | None]]:
    """Mean and its 95% t-interval as a JSON-ready pair (NaN becomes ``None``)."""
    x = np.asarray(values, dtype=np.float64)
    low, high = t_interval(x)
    return float(x.mean()), [None if math.isnan(b) else b for b in (low, high)]
