"""Array aliases and array helpers shared by every layer of the library."""

from __future__ import annotations

import importlib

import numpy as np
from numpy.typing import NDArray

try:
    _umath = importlib.import_module("numpy._core.umath")  # numpy >= 2
except ImportError:  # pragma: no cover - numpy 1.26
    _umath = importlib.import_module("numpy.core.umath")

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: the clip ufunc itself: ``np.clip`` adds Python-level dispatch to every call
clip_ufunc: np.ufunc = _umath.clip

__all__ = ["FloatArray", "IntArray", "clip_ufunc", "scalar_array"]


def scalar_array(value: float) -> FloatArray:
    """``value`` as a 0-d float64 array, for a hot loop's arithmetic: numpy 2 takes an
    array operand faster than a Python float (it converts a scalar at every call; the
    figure: ``docs/decisions/0008-library-hot-paths.md``), and the arithmetic is the
    same (float64 either way).  Keep one and assign
    ``out[()] = value`` where the value changes."""
    return np.array(value, dtype=np.float64)
