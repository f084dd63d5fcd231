"""The inference form of a random hinge forest or fern ensemble (numpy, no autograd).

Conventions are those of :mod:`banditree.models.hinge.ops`.  A single context walks
one path per tree, all trees at once: ``D`` steps of four numpy calls each, reading
the margins of the decisions on the path.  Node and leaf ids are flat: decision ``i`` of tree ``t``
is ``t * N + i`` and leaf ``j`` is ``t * 2**D + j``; a lookup table gives each
decision's LEFT child (the RIGHT child is the next id), so a step is
``child = left[node] + (r > 0)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from banditree.models.dgt.tree_ops import FloatArray, IntArray
from banditree.models.hinge.ops import hinge_traverse, hinge_traverse_one


@dataclass(frozen=True)
class FrozenHingeForest:
    """One parameter version: contiguous arrays, integer feature indices, lookup tables.

    ``features``, ``thresholds`` ``(T, N)``; ``weights`` ``(T, 2**D, K)``; ``bias``
    ``(K,)``; ``pool`` ``(P, d)`` or None; ``mean`` divides the tree sum by ``T``.
    """

    features: IntArray
    thresholds: FloatArray
    weights: FloatArray
    bias: FloatArray
    pool: FloatArray | None
    depth: int
    ferns: bool = False
    mean: bool = False
    _flat_features: IntArray = field(init=False, repr=False, compare=False)
    _flat_thresholds: FloatArray = field(init=False, repr=False, compare=False)
    _left: IntArray = field(init=False, repr=False, compare=False)
    _roots: IntArray = field(init=False, repr=False, compare=False)
    _leaf_rows: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n_trees, n_nodes = self.features.shape
        n_leaves = 1 << self.depth
        node = np.arange(n_nodes)
        child = 2 * node + 1  # LEFT child in the tree's own numbering
        trees = np.arange(n_trees)[:, None]
        # flat id of each decision's LEFT child: a decision below it, or a leaf row
        left = np.where(
            child < n_nodes, trees * n_nodes + child, trees * n_leaves + (child - n_nodes)
        )
        scale = 1.0 / n_trees if self.mean else 1.0
        for name, value in (
            ("_flat_features", np.ascontiguousarray(self.features.ravel())),
            ("_flat_thresholds", np.ascontiguousarray(self.thresholds.ravel())),
            ("_left", np.ascontiguousarray(left.ravel())),
            ("_roots", np.arange(n_trees, dtype=np.int64) * n_nodes),
            ("_leaf_rows", self.weights.reshape(n_trees * n_leaves, -1) * scale),
        ):
            object.__setattr__(self, name, value)

    @property
    def n_trees(self) -> int:
        return int(self.features.shape[0])

    def forward_one(self, x: FloatArray) -> tuple[FloatArray, int | None]:
        """Forest output ``(K,)`` for one context ``(d,)`` and, for a single tree, its leaf."""
        z = x if self.pool is None else self.pool @ x
        if self.ferns:
            leaf, margin, _ = hinge_traverse_one(
                z, self.features, self.thresholds, self.depth, ferns=True
            )
            rows = leaf + np.arange(self.n_trees) * (1 << self.depth)
            out: FloatArray = self.bias + np.abs(margin) @ self._leaf_rows.take(rows, 0)
            return out, int(leaf[0]) if self.n_trees == 1 else None
        # every decision's margin in two gathers (T * N values, cheaper than three
        # gathers per level); only the D margins on each path are read below
        all_margins = z.take(self._flat_features)
        all_margins -= self._flat_thresholds
        left, node = self._left, self._roots
        margins = []
        for _ in range(self.depth):
            r = all_margins.take(node)
            margins.append(r)
            node = left.take(node)
            node += r > 0.0
        # |r*|: the smallest |r| on each path (the first of equals, as in the traversal)
        smallest = np.abs(margins).min(axis=0)
        out = self.bias + smallest @ self._leaf_rows.take(node, 0)
        return out, int(node[0]) if self.n_trees == 1 else None

    def forward_batch(self, x: FloatArray) -> FloatArray:
        """Forest outputs ``(B, K)`` for a batch ``(B, d)``."""
        return self.forward_batch_leaves(x)[0]

    def forward_batch_leaves(self, x: FloatArray) -> tuple[FloatArray, IntArray | None]:
        """Forest outputs ``(B, K)`` and, for a single tree, the leaves ``(B,)``."""
        z = x if self.pool is None else x @ self.pool.T
        leaf, margin, _ = hinge_traverse(z, self.features, self.thresholds, self.depth, self.ferns)
        rows = leaf + np.arange(self.n_trees) * (1 << self.depth)  # (B, T)
        per_tree = self._leaf_rows[rows] * np.abs(margin)[..., None]  # (B, T, K)
        out: FloatArray = self.bias + per_tree.sum(axis=1)
        return out, leaf[:, 0].copy() if self.n_trees == 1 else None
