"""The inference form of a random hinge forest or fern ensemble (numpy, no autograd).

Conventions are those of :mod:`banditree.models.hinge.ops`.  Node and leaf ids are
flat: decision ``i`` of tree ``t`` is ``t * N + i`` and leaf ``j`` is ``t * 2**D + j``.

A single context of a forest of several trees takes every leaf at once, in a fixed
handful of numpy calls whatever the depth: leaf ``l`` reads, at each level, the margin
``r`` of the decision on its path signed by the side it takes there (``+r`` RIGHT,
``-r`` LEFT).  On the leaf the context reaches each of these is ``|r|`` (RIGHT when
``r > 0``), so their minimum is ``|r*|``; every other leaf has a negative (or zero)
entry where the context turns away from it.  ``max(min, 0)`` is therefore ``|r*|`` on
the reached leaf and 0 elsewhere, and one product with the leaf rows gives the forest
output: exactly the traversal's ``w[leaf] * |r*|``, summed.  A single tree, whose
reached leaf is reported, walks its path (``child = left[node] + (r > 0)``, a lookup
table giving each decision's LEFT child).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.hinge.ops import hinge_traverse, hinge_traverse_one

#: ``z`` and ``-z`` interleaved (``multiply.outer(z, _PLUS_MINUS).ravel()``): input ``f``
#: at ``2 f``, its negative at ``2 f + 1``
_PLUS_MINUS = np.array([1.0, -1.0])
_outer = np.multiply.outer
_min_levels = np.minimum.reduce
_maximum = np.maximum


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
    _path_inputs: IntArray = field(init=False, repr=False, compare=False)
    _path_thresholds: FloatArray = field(init=False, repr=False, compare=False)

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
        inputs, thresholds = self._leaf_paths()
        for name, value in (
            ("_path_inputs", inputs),
            ("_path_thresholds", thresholds),
            ("_flat_features", np.ascontiguousarray(self.features.ravel())),
            ("_flat_thresholds", np.ascontiguousarray(self.thresholds.ravel())),
            ("_left", np.ascontiguousarray(left.ravel())),
            ("_roots", np.arange(n_trees, dtype=np.int64) * n_nodes),
            ("_leaf_rows", self.weights.reshape(n_trees * n_leaves, -1) * scale),
        ):
            object.__setattr__(self, name, value)

    def _leaf_paths(self) -> tuple[IntArray, FloatArray]:
        """Per level and leaf ``(D, T 2**D)``: where the signed margin's input sits among
        ``z`` and ``-z`` interleaved, and the threshold signed the same way."""
        n_trees, n_leaves = self.features.shape[0], 1 << self.depth
        leaf = np.arange(n_leaves)
        inputs = np.empty((self.depth, n_trees * n_leaves), dtype=np.int64)
        thresholds = np.empty((self.depth, n_trees * n_leaves))
        node = np.zeros(n_leaves, dtype=np.int64)  # the decision on the path, per level
        for level in range(self.depth):
            right = (leaf >> (self.depth - 1 - level)) & 1
            decision = np.full(n_leaves, level) if self.ferns else node
            # RIGHT reads +r = z[f] - t; LEFT reads -r = (-z[f]) - (-t)
            inputs[level] = (2 * self.features[:, decision] + 1 - right).ravel()
            thresholds[level] = (self.thresholds[:, decision] * (2 * right - 1)).ravel()
            node = 2 * node + 1 + right
        return inputs, thresholds

    @property
    def n_trees(self) -> int:
        return int(self.features.shape[0])

    def kernel_forest(
        self,
    ) -> tuple[FloatArray | None, IntArray, FloatArray, FloatArray, FloatArray]:
        """``(pool, features, thresholds, leaf rows, bias)`` as the compiled kernel reads
        them (:func:`banditree.kernel.hinge_decide`): C-contiguous, the leaf rows
        ``(T 2**D, K)`` divided by ``T`` for the mean, as :meth:`forward_batch` reads them."""
        contiguous = np.ascontiguousarray
        return (
            None if self.pool is None else contiguous(self.pool, dtype=np.float64),
            contiguous(self.features, dtype=np.int64),
            contiguous(self.thresholds, dtype=np.float64),
            contiguous(self._leaf_rows, dtype=np.float64),
            contiguous(self.bias, dtype=np.float64),
        )

    def forward_one(self, x: FloatArray) -> tuple[FloatArray, int | None]:
        """Forest output ``(K,)`` for one context ``(d,)`` and, for a single tree, its leaf."""
        z = x if self.pool is None else self.pool @ x
        if self.n_trees > 1:  # every leaf at once (see the module notes)
            signed = _outer(z, _PLUS_MINUS).take(self._path_inputs)  # (D, leaves)
            signed -= self._path_thresholds
            reached = _min_levels(signed, axis=0)  # |r*| on the reached leaves, <= 0 elsewhere
            _maximum(reached, 0.0, out=reached)
            out: FloatArray = reached @ self._leaf_rows
            out += self.bias
            return out, None
        if self.ferns:
            leaf, margin, _ = hinge_traverse_one(
                z, self.features, self.thresholds, self.depth, ferns=True
            )
            rows = leaf + np.arange(self.n_trees) * (1 << self.depth)
            fern_out: FloatArray = self.bias + np.abs(margin) @ self._leaf_rows.take(rows, 0)
            return fern_out, int(leaf[0])
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
        tree_out: FloatArray = self.bias + smallest @ self._leaf_rows.take(node, 0)
        return tree_out, int(node[0])

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
