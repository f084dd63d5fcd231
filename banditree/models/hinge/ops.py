"""Pure numpy helpers for random hinge trees and ferns (seed 001, algorithm 3; the hot path).

Conventions shared with the torch form (:mod:`banditree.models.hinge.function`):

* a forest of ``T`` trees of depth ``D`` holds ``features`` and ``thresholds`` of
  shape ``(T, N)``: ``N = 2**D - 1`` decision nodes per tree in breadth-first order
  (children of ``i`` are ``2i+1`` left and ``2i+2`` right), or ``N = D`` for ferns
  (one decision per depth level, shared by every node at that level);
* the signed margin at a decision is ``r = z[f] - t``; the example goes RIGHT when
  ``r > 0`` (ties go LEFT, as for every tree in the project);
* leaves are numbered left to right, ``0 .. 2**D - 1``;
* ``r*`` is the margin of smallest ``|r|`` on the path and ``v*`` its decision index;
  ties keep the shallowest decision (the strict ``<`` of algorithm 3);
* tree ``m`` outputs ``w[m, leaf] * |r*|`` with ``w`` of shape ``(T, 2**D, K)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from banditree.core.arrays import FloatArray, IntArray

#: Largest tree or fern depth (``2**D`` leaves per tree).
MAX_DEPTH = 12


def check_depth(depth: int) -> int:
    """Validate a hinge tree depth, returning it."""
    if not isinstance(depth, int | np.integer) or not 1 <= int(depth) <= MAX_DEPTH:
        raise ValueError(f"depth must be an integer in [1, {MAX_DEPTH}], got {depth!r}")
    return int(depth)


def n_decisions(depth: int, ferns: bool) -> int:
    """Decisions per tree: ``2**D - 1`` for a tree, ``D`` for a fern."""
    return depth if ferns else (1 << depth) - 1


def init_forest(
    rng: np.random.Generator,
    n_trees: int,
    depth: int,
    n_inputs: int,
    n_outputs: int,
    ferns: bool = False,
) -> tuple[IntArray, FloatArray, FloatArray]:
    """Algorithm 1: random feature indices, thresholds ``U(-3, 3)``, leaf weights ``N(0, 0.01**2)``.

    Returns ``features`` ``(T, N)``, ``thresholds`` ``(T, N)``, ``weights`` ``(T, 2**D, K)``.
    The thresholds are in standard deviations: the inputs must be standardised.
    """
    shape = (n_trees, n_decisions(depth, ferns))
    features = rng.integers(0, n_inputs, size=shape).astype(np.int64)
    thresholds = rng.uniform(-3.0, 3.0, size=shape)
    weights = rng.normal(0.0, 0.01, size=(n_trees, 1 << depth, n_outputs))
    return features, thresholds, weights


def hinge_traverse(
    z: FloatArray,
    features: IntArray,
    thresholds: FloatArray,
    depth: int,
    ferns: bool = False,
) -> tuple[IntArray, FloatArray, IntArray]:
    """Algorithm 3 for every example and tree at once.

    Shape:
        ``z`` ``(B, F)``; ``features``, ``thresholds`` ``(T, N)`` ->
        ``leaf`` ``(B, T)``, signed margin ``r*`` ``(B, T)``, arg-min decision ``v*`` ``(B, T)``.
    """
    n_examples, n_trees = z.shape[0], features.shape[0]
    if ferns:
        r = z[:, features] - thresholds  # (B, T, D)
        bits = (r > 0.0).astype(np.int64)
        leaf: IntArray = bits @ (1 << np.arange(depth - 1, -1, -1, dtype=np.int64))
        arg: IntArray = np.argmin(np.abs(r), axis=2)  # first minimum = shallowest
        margin: FloatArray = np.take_along_axis(r, arg[..., None], axis=2)[..., 0]
        return leaf, margin, arg
    trees = np.arange(n_trees)
    rows = np.arange(n_examples)[:, None]
    node = np.zeros((n_examples, n_trees), dtype=np.int64)
    best_margin = np.full((n_examples, n_trees), np.inf)
    best_node = np.zeros((n_examples, n_trees), dtype=np.int64)
    for _ in range(depth):
        r = z[rows, features[trees, node]] - thresholds[trees, node]  # (B, T)
        closer = np.abs(r) < np.abs(best_margin)
        best_margin = np.where(closer, r, best_margin)
        best_node = np.where(closer, node, best_node)
        node = 2 * node + 1 + (r > 0.0)
    return node - ((1 << depth) - 1), best_margin, best_node


def hinge_traverse_one(
    z: FloatArray,
    features: IntArray,
    thresholds: FloatArray,
    depth: int,
    ferns: bool = False,
) -> tuple[IntArray, FloatArray, IntArray]:
    """:func:`hinge_traverse` for one example, with fewer numpy calls (the serving hot path).

    Shape:
        ``z`` ``(F,)``; ``features``, ``thresholds`` ``(T, N)`` -> three ``(T,)`` arrays.
    """
    if ferns:
        r = z[features] - thresholds  # (T, D)
        leaf: IntArray = (r > 0.0) @ (1 << np.arange(depth - 1, -1, -1, dtype=np.int64))
        arg: IntArray = np.argmin(np.abs(r), axis=1)
        return leaf, r[np.arange(r.shape[0]), arg], arg
    n_trees, n_nodes = features.shape
    flat_features, flat_thresholds = features.ravel(), thresholds.ravel()
    offset = np.arange(n_trees) * n_nodes  # (T,) flat index of each root
    path = np.empty((depth, n_trees), dtype=np.int64)  # flat decision index per level
    margins = np.empty((depth, n_trees))
    flat = offset.copy()
    for level in range(depth):
        path[level] = flat
        r = z[flat_features[flat]] - flat_thresholds[flat]
        margins[level] = r
        # child in flat form: offset + 2 * (flat - offset) + 1 + right
        flat = 2 * flat - offset + 1 + (r > 0.0)
    best = np.argmin(np.abs(margins), axis=0)  # (T,) first minimum = shallowest
    trees = np.arange(n_trees)
    leaf_one: IntArray = flat - offset - n_nodes
    return leaf_one, margins[best, trees], path[best, trees] - offset


def hinge_tree_outputs(weights: FloatArray, leaf: IntArray, margin: FloatArray) -> FloatArray:
    """Per-tree outputs ``w[m, leaf] * |r*|``: ``(..., T)`` -> ``(..., T, K)``."""
    trees = np.arange(weights.shape[0])
    out: FloatArray = weights[trees, leaf] * np.abs(margin)[..., None]
    return out


def hinge_gradients(
    weights: FloatArray,
    features: IntArray,
    leaf: NDArray[np.int64],
    margin: FloatArray,
    node: NDArray[np.int64],
    grad_tree_out: FloatArray,
    n_inputs: int,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Eqs. 11-12 for a batch: two non-zero entries per example and tree, plus input gradients.

    ``leaf``, ``margin``, ``node`` ``(B, T)`` come from :func:`hinge_traverse`;
    ``grad_tree_out`` ``(B, T, K)`` is ``d loss / d (tree output)``.  Returns the
    gradients of ``weights`` ``(T, 2**D, K)`` and of the thresholds ``(T, N)``, summed
    over the batch, and of the inputs ``(B, F)``.
    """
    n_trees, n_leaves, k = weights.shape
    n_examples = leaf.shape[0]
    trees = np.arange(n_trees)
    grad_w: FloatArray = np.zeros((n_trees * n_leaves, k))
    np.add.at(grad_w, trees * n_leaves + leaf, np.abs(margin)[..., None] * grad_tree_out)
    signed = np.sign(margin) * np.einsum("btk,btk->bt", weights[trees, leaf], grad_tree_out)
    grad_t = np.bincount(
        (trees * features.shape[1] + node).ravel(), weights=-signed.ravel(), minlength=features.size
    ).astype(np.float64, copy=False)  # float already (weighted): the cast is for the type
    rows = np.arange(n_examples)[:, None] * n_inputs
    grad_z = np.bincount(
        (rows + features[trees, node]).ravel(),
        weights=signed.ravel(),
        minlength=n_examples * n_inputs,
    ).astype(np.float64, copy=False)
    return (
        grad_w.reshape(weights.shape),
        grad_t.reshape(features.shape),
        grad_z.reshape(n_examples, n_inputs),
    )
