"""Pure array helpers for complete oblique trees (numpy; the hot path).

Conventions (``docs``: algorithms section 1), used everywhere in the project:

* internal nodes in breadth-first order, children of node ``i`` are ``2i+1`` (left)
  and ``2i+2`` (right); leaves are numbered left to right, ``0 .. 2**h - 1``;
* at node ``i`` the example goes RIGHT when ``a_i > 0`` and LEFT otherwise, so the
  quantised sign is ``sign(a) = +1 if a > 0 else -1``;
* ``S(i, l) = +1`` when leaf ``l`` lies in the right subtree of its depth-``i``
  ancestor, ``-1`` when in the left one.

The path score of leaf ``l`` is ``q_l = sum_i sign(a_{I(i,l)}) S(i,l)``; the reached
leaf is the unique leaf with ``q_l = h``.  :func:`path_scores` computes them level
by level in ``O(2**h)`` per example; the bandit gradients build the dense path
matrix from it once per height (:func:`banditree.models.dgt.spec.path_matrix`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.limits import MAX_HEIGHT as MAX_HEIGHT


def check_height(height: int) -> int:
    """Validate a tree height, returning it."""
    if not isinstance(height, int | np.integer) or not 1 <= int(height) <= MAX_HEIGHT:
        raise ValueError(f"height must be an integer in [1, {MAX_HEIGHT}], got {height!r}")
    return int(height)


def quantised_sign(a: FloatArray) -> FloatArray:
    """``+1`` where ``a > 0``, ``-1`` elsewhere (ties go LEFT)."""
    return np.where(a > 0, 1.0, -1.0)


def path_scores(sign: FloatArray, height: int) -> FloatArray:
    """Sum-form path scores ``q`` (eq. 4 without the outer step).

    Shape: ``sign`` ``(..., 2**h - 1)`` -> ``(..., 2**h)``.
    """
    lead = sign.shape[:-1]
    q = np.zeros((*lead, 1))
    for depth in range(height):
        s = sign[..., (1 << depth) - 1 : (1 << (depth + 1)) - 1]  # (..., 2**depth)
        q = np.stack((q - s, q + s), axis=-1).reshape(*lead, 1 << (depth + 1))
    return q


#: a batch of at most this many rows through a tree of at most this height is routed by
#: :func:`_route_small` (one small product, cheaper than the levels' gathers there:
#: ``docs/decisions/0008-library-hot-paths.md``); larger
#: products cost more than the levels' gathers (and may wake BLAS threads)
SMALL_BATCH, SMALL_HEIGHT = 16, 7


def route_batch(weights: FloatArray, x: FloatArray, height: int, bias: FloatArray) -> IntArray:
    """Leaves reached by a batch ``(B, d)``: one gathered dot product per level."""
    if x.shape[0] <= SMALL_BATCH and height <= SMALL_HEIGHT:
        return _route_small(weights, x, height, bias)
    node = np.zeros(x.shape[0], dtype=np.int64)
    for _ in range(height):
        a = np.einsum("bd,bd->b", weights[node], x) + bias[node]  # (B,)
        node = 2 * node + np.where(a > 0.0, 2, 1)
    return node - ((1 << height) - 1)


def _route_small(weights: FloatArray, x: FloatArray, height: int, bias: FloatArray) -> IntArray:
    """:func:`route_batch` of a few rows through a small tree: every node's activation in
    one product, then the reached leaf as the one whose path score is ``h`` (the largest,
    :func:`path_scores`) by one more product with the path matrix."""
    a = x @ weights.T
    a += bias
    sign = np.where(a > 0.0, 1.0, -1.0)
    leaves: IntArray = np.argmax(sign @ _paths(height), axis=1)
    return leaves


@functools.cache
def _paths(height: int) -> FloatArray:
    """``(2**h - 1, 2**h)``: ``sign @ _paths(h)`` are the path scores of every leaf."""
    paths: FloatArray = np.ascontiguousarray(path_scores(np.eye((1 << height) - 1), height))
    paths.setflags(write=False)
    return paths


def leaf_from_activations(a: FloatArray, height: int) -> IntArray:
    """Leaves reached given all node activations ``(..., 2**h - 1)`` (root-to-leaf walk)."""
    lead = a.shape[:-1]
    node = np.zeros(lead, dtype=np.int64)
    for _ in range(height):
        go_right = np.take_along_axis(a, node[..., None], axis=-1)[..., 0] > 0.0
        node = 2 * node + np.where(go_right, 2, 1)
    return node - ((1 << height) - 1)


def effective_weights_np(layers: Sequence[np.ndarray]) -> np.ndarray:
    """Collapse numpy layer matrices ``[W1, ..., WL]`` into ``WL @ ... @ W1``."""
    w = layers[0]
    for layer in layers[1:]:
        w = layer @ w
    return w
