"""TEL's shape bounds and initialiser (numpy-free checks, shared by the numpy and torch forms)."""

from __future__ import annotations

import math

#: Deepest tree the layer builds (``2**12`` leaves per tree).
MAX_DEPTH = 12
#: Initialisers of the reference implementation: both weight sets ``U(-0.01, 0.01)``.
INIT_BOUND = 0.01


def check_depth(depth: int) -> int:
    """Validate a TEL tree depth, returning it."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be an integer in [1, {MAX_DEPTH}], got {depth!r}")
    return depth


def check_gamma(gamma: float) -> float:
    """Validate the smooth-step width ``gamma`` (finite, ``> 0``), returning it as a float."""
    g = float(gamma)
    if not (math.isfinite(g) and g > 0.0):
        raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")
    return g
