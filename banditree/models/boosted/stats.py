"""Per-leaf uncertainty of a boosted ensemble from the rows it was fitted on.

TEUCB (Nilsson et al., arXiv 2402.06963) gives each leaf of each tree the variance of
the rewards of its training rows divided by their count, and an action's predicted
reward the variance summed over the leaves it reaches.  Two departures are options:

* ``target``: ``"reward"`` (the paper's: the rows' rewards) or ``"residual"`` (what the
  tree itself was fitted to: the reward minus the trees before it, so later trees,
  which fit little, add little);
* ``prior``: a pseudo-count of rows of variance ``prior_variance`` mixed into every
  leaf, so that a leaf of few identical rows is not certain (0: the paper's).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

#: ``(leaves (B, T), targets (B,), size) -> (count, squares)`` of the ``reward`` target:
#: the compiled kernel's ``boosted_leaf_sums`` (the bincounts below, the same numbers)
LeafSums = Callable[[IntArray, FloatArray, int], tuple[FloatArray, FloatArray]]


def leaf_uncertainty(
    leaves: IntArray,
    targets: FloatArray,
    values: FloatArray,
    *,
    target: str = "reward",
    prior: float = 0.0,
    prior_variance: float = 0.25,
    sums: LeafSums | None = None,
) -> FloatArray:
    """``variance / count`` of every leaf ``(T, L)`` over the fitted rows.

    Parameters
    ----------
    leaves
        ``(B, T)`` flat leaf (``t * L + j``) of each row in each tree.
    targets
        ``(B,)`` the rows' rewards.
    values
        ``(T, L)`` leaf values (for ``target="residual"``).
    target
        ``"reward"`` or ``"residual"``.
    prior, prior_variance
        Pseudo-rows of this variance added to every leaf.
    sums
        Counts the ``reward`` target's rows and squares in one pass (None: numpy).

    Returns
    -------
    numpy.ndarray
        ``(T, L)``, finite and ``>= 0``; a leaf no row reached gets
        ``prior_variance / max(prior, 1)``.
    """
    t, n_leaves = values.shape
    size = t * n_leaves
    if target not in ("reward", "residual"):
        raise ValueError(f"target must be 'reward' or 'residual', got {target!r}")
    if target == "reward" and sums is not None:
        count, squares = sums(np.ascontiguousarray(leaves, dtype=np.int64), targets, size)
    else:
        flat = leaves.ravel()
        if target == "reward":
            y = np.broadcast_to(targets[:, None], leaves.shape).ravel()
        else:
            before = np.cumsum(values.ravel()[leaves], axis=1) - values.ravel()[leaves]
            y = (targets[:, None] - before).ravel()
        count = np.bincount(flat, minlength=size).astype(np.float64)
        total = np.bincount(flat, weights=y, minlength=size)
        mean = total / np.maximum(count, 1.0)
        centred = y - mean[flat]
        squares = np.bincount(flat, weights=centred * centred, minlength=size).astype(np.float64)
    weight = count + prior
    variance = (squares + prior * prior_variance) / np.maximum(weight, 1.0)
    out = variance / np.maximum(weight, 1.0)
    out[weight <= 0.0] = prior_variance
    result: FloatArray = np.maximum(out, 0.0).reshape(t, n_leaves)
    return result
