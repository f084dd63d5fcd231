"""The served form of a boosted regression ensemble on (context, action): numpy arrays.

A fitted gradient-boosting ensemble (LightGBM's JSON dump, :func:`from_dump`) becomes
complete binary trees of one depth ``D``: internal node ``i`` of tree ``t`` is row
``t * N + i`` (``N = 2**D - 1``, breadth first, children ``2i + 1`` LEFT and
``2i + 2`` RIGHT) and the context goes RIGHT when ``x[feature] > threshold`` (LightGBM's
numerical split sends ``x <= threshold`` LEFT).  A leaf shallower than ``D`` is padded
with splits whose threshold is ``+inf`` (always LEFT), its value copied to every leaf
below it, so that every walk takes exactly ``D`` steps of index arithmetic.

The model input is the context followed by the one-hot action (``d + K`` columns): one
regression of the reward on both, as in Nilsson et al., "Tree Ensembles for Contextual
Bandits" (arXiv 2402.06963).  Beside each leaf's value the ensemble holds its
*uncertainty*: the variance of the rows the leaf was fitted on divided by their count
(:func:`banditree.models.boosted.stats.leaf_uncertainty`).  The variance of an
action's predicted reward is the sum over trees of the uncertainty of the leaf it
reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray, clip_ufunc
from banditree.models.boosted.linear import Z_CLIP

#: tensor names of :meth:`FrozenBoostedEnsemble.tensors`
TENSORS = ("features", "thresholds", "values", "uncertainty", "base_mean", "base_scale", "base")


@dataclass(frozen=True)
class WalkTables:
    """The walks' lookup tables of one version, derived once from its arrays (see
    :meth:`FrozenBoostedEnsemble.action_leaves` and :meth:`~FrozenBoostedEnsemble.action_value`).
    """

    #: ``base_mean * base_scale`` ``(d,)``, subtracted after scaling
    offset: FloatArray
    # every action's walks at once (action_leaves): node ``t N + i`` times K plus the lane
    ctx_features: IntArray
    ctx_thresholds: FloatArray
    arm_table: IntArray
    first: IntArray
    step: IntArray
    lane: IntArray
    leaf_offset: IntArray
    # one walk per tree (action_value): node t N + i, as route
    flat_features: IntArray
    flat_thresholds: FloatArray
    tree_first: IntArray
    tree_step: IntArray
    tree_leaf_offset: IntArray


@dataclass(frozen=True)
class FrozenBoostedEnsemble:
    """One fitted version of the ensemble: contiguous arrays, walked level by level.

    ``features`` ``(T, N)`` int64 column of each split (``0 <= f < d + K``);
    ``thresholds`` ``(T, N)``; ``values`` ``(T, 2**D)`` leaf outputs (LightGBM's
    shrinkage and initial score included, so the prediction is their sum over trees);
    ``uncertainty`` ``(T, 2**D)`` leaf variance / count (0 until set).  The trees
    add to a linear base per action, ``base[a] . [1, (x - base_mean) * base_scale]``
    (``base`` ``(K, d + 1)``, zeros for none; :mod:`banditree.models.boosted.linear`).
    """

    features: IntArray
    thresholds: FloatArray
    values: FloatArray
    uncertainty: FloatArray
    n_context: int
    n_actions: int
    base_mean: FloatArray
    base_scale: FloatArray
    base: FloatArray
    #: derived in ``__post_init__``
    tables: WalkTables = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # C-contiguous 8-byte arrays, as the compiled kernel reads them (no copy if so)
        for name in TENSORS:
            dtype = np.int64 if name == "features" else np.float64
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=dtype))
        t, n = self.features.shape
        if self.thresholds.shape != (t, n) or self.values.shape != (t, n + 1):
            raise ValueError("features, thresholds (T, N) and values (T, N + 1) disagree")
        if self.uncertainty.shape != self.values.shape:
            raise ValueError("uncertainty must have the shape of values")
        width = self.n_context + self.n_actions
        if t and (int(self.features.min()) < 0 or int(self.features.max()) >= width):
            raise ValueError(f"split features must lie in [0, {width - 1}]")
        if not (np.isfinite(self.values).all() and np.isfinite(self.uncertainty).all()):
            raise ValueError("leaf values and uncertainties must be finite")
        if (self.uncertainty < 0).any():
            raise ValueError("leaf uncertainties must be >= 0")
        d, k = self.n_context, self.n_actions
        if self.base.shape != (k, d + 1) or self.base_mean.shape != (d,):
            raise ValueError(f"the linear base must be ({k}, {d + 1}) with a mean of ({d},)")
        if self.base_scale.shape != (d,):
            raise ValueError(f"base_scale must be ({d},)")
        with np.errstate(over="ignore"):
            offset = self.base_mean * self.base_scale
        if not all(np.isfinite(a).all() for a in (self.base, offset, self.base_scale)):
            raise ValueError("the linear base must be finite")
        # the walk's lookup tables, derived once per version (see :meth:`action_leaves`)
        k, flat = self.n_actions, self.features.ravel()
        arm = flat >= self.n_context
        # an action split reads the one-hot column: 1 for its own action, 0 for the others
        onehot = np.arange(k)[None, :] == (flat - self.n_context)[:, None]
        arm_right = (onehot.astype(np.float64) > self.thresholds.ravel()[:, None]) & arm[:, None]
        start = (np.arange(t, dtype=np.intp) * n)[None, :]
        lane = np.arange(k, dtype=np.intp)[:, None]
        tables = WalkTables(
            offset=offset,
            ctx_features=np.where(arm, 0, flat).astype(np.intp),
            ctx_thresholds=np.where(arm, np.inf, self.thresholds.ravel()),
            arm_table=arm_right.astype(np.intp) * k,
            first=start * k + lane,
            step=(1 - start) * k - lane,
            lane=lane,
            leaf_offset=start // max(n, 1) - n,
            flat_features=flat.astype(np.intp),
            flat_thresholds=self.thresholds.ravel().copy(),
            tree_first=start[0].copy(),
            tree_step=1 - start[0],
            tree_leaf_offset=start[0] // max(n, 1) - n,
        )
        object.__setattr__(self, "tables", tables)

    @property
    def tree_arrays(self) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        """``features, thresholds, values, uncertainty``: the trees as the compiled kernel
        reads them (:func:`banditree.kernel.boosted_decide`)."""
        return self.features, self.thresholds, self.values, self.uncertainty

    @property
    def linear_arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``offset, scale, weights``: the linear base as the compiled kernel reads it
        (the context standardised as ``x * scale - offset``, clipped to ``Z_CLIP``)."""
        return self.tables.offset, self.base_scale, self.base

    @property
    def n_trees(self) -> int:
        return int(self.features.shape[0])

    @property
    def depth(self) -> int:
        return int(self.features.shape[1] + 1).bit_length() - 1

    # -- one context, every action ------------------------------------------------------
    def action_leaves(self, x: FloatArray) -> IntArray:
        """The flat leaf (``t * 2**D + j``) each action reaches in each tree, ``(K, T)``.

        All ``K x T`` walks advance together on one index ``p = node * K + k`` (``node``
        global, ``t * N + i``) into a table of ``K`` for RIGHT and 0 for LEFT:
        context splits are compared once per call, action splits come from a table
        fixed per version; a step is ``p <- 2 p + (1 - t N) K - k + table[p]``.
        """
        k, tables = self.n_actions, self.tables
        right = (x[tables.ctx_features] > tables.ctx_thresholds) * k
        table = (tables.arm_table + right[:, None]).ravel()
        p: IntArray = tables.first.copy()
        step = tables.step
        for _ in range(self.depth):
            go = table[p]
            p *= 2
            p += step
            p += go
        # p is (t N + N + j) K + k for leaf j of tree t: its row is t (N + 1) + j
        p -= tables.lane
        p //= k
        p += tables.leaf_offset
        return p

    def action_scores(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Predicted reward ``(K,)`` of every action for context ``x`` ``(d,)``, and its
        variance ``(K,)`` (the summed leaf uncertainties)."""
        leaves = self.action_leaves(x)
        z = self.standardized(x)
        mean: FloatArray = self.values.ravel()[leaves].sum(axis=1) + self.base[:, 1:] @ z
        mean += self.base[:, 0]
        var: FloatArray = self.uncertainty.ravel()[leaves].sum(axis=1)
        return mean, var

    def action_value(self, x: FloatArray, action: int) -> float:
        """Predicted reward of ``action`` for context ``x`` ``(d,)``: one walk per tree."""
        d = self.n_context
        inputs = np.zeros(d + self.n_actions)
        inputs[:d] = x
        inputs[d + action] = 1.0
        tables = self.tables
        feats, thr = tables.flat_features, tables.flat_thresholds
        node: IntArray = tables.tree_first.copy()
        step = tables.tree_step
        for _ in range(self.depth):
            go = inputs[feats[node]] > thr[node]
            node *= 2
            node += step
            node += go
        node += tables.tree_leaf_offset
        w = self.base[action]
        trees = float(self.values.ravel()[node].sum())
        return trees + float(w[0] + w[1:] @ self.standardized(x))

    # -- rows of (context, action) ------------------------------------------------------
    def route(self, inputs: FloatArray) -> IntArray:
        """The flat leaf of every row of ``inputs`` ``(B, d + K)`` in every tree, ``(B, T)``."""
        b = inputs.shape[0]
        t, n = self.features.shape
        start = np.arange(t, dtype=np.int64) * n
        node = np.broadcast_to(start, (b, t)).copy()
        rows = np.arange(b)[:, None]
        feats, thr = self.features.ravel(), self.thresholds.ravel()
        for _ in range(self.depth):
            go = inputs[rows, feats[node]] > thr[node]
            node = 2 * node + (1 - start)[None, :] + go
        return node - n + (start // n if n else start)[None, :]

    def standardized(self, x: FloatArray) -> FloatArray:
        """``(x - base_mean) * base_scale`` clipped to ``[-Z_CLIP, Z_CLIP]`` (any finite
        context, however large, gives finite numbers)."""
        with np.errstate(over="ignore"):
            z = x * self.base_scale
        z -= self.tables.offset
        out: FloatArray = clip_ufunc(z, -Z_CLIP, Z_CLIP, out=z)
        return out

    def base_rows(self, inputs: FloatArray) -> FloatArray:
        """The linear base of every row of ``inputs`` ``(B, d + K)``."""
        d = self.n_context
        z = self.standardized(inputs[:, :d])
        actions = np.argmax(inputs[:, d:], axis=1)
        w = self.base[actions]
        out: FloatArray = w[:, 0] + np.einsum("bd,bd->b", w[:, 1:], z)
        return out

    def predict_rows(self, inputs: FloatArray) -> FloatArray:
        """Predicted reward of every row of ``inputs`` ``(B, d + K)``."""
        trees: FloatArray = self.values.ravel()[self.route(inputs)].sum(axis=1)
        return trees + self.base_rows(inputs)

    def with_uncertainty(self, uncertainty: FloatArray) -> FrozenBoostedEnsemble:
        """This ensemble with the leaf uncertainties ``uncertainty`` ``(T, 2**D)``."""
        return FrozenBoostedEnsemble(
            self.features, self.thresholds, self.values, uncertainty, self.n_context,
            self.n_actions, self.base_mean, self.base_scale, self.base,
        )  # fmt: skip

    # -- persistence --------------------------------------------------------------------
    def tensors(self) -> dict[str, np.ndarray]:
        """The arrays that restore this ensemble exactly (:meth:`from_tensors`)."""
        return {name: getattr(self, name) for name in TENSORS}

    @classmethod
    def from_tensors(
        cls, tensors: dict[str, np.ndarray], n_context: int, n_actions: int
    ) -> FrozenBoostedEnsemble:
        return cls(
            np.asarray(tensors["features"], dtype=np.int64),
            np.asarray(tensors["thresholds"], dtype=np.float64),
            np.asarray(tensors["values"], dtype=np.float64),
            np.asarray(tensors["uncertainty"], dtype=np.float64),
            n_context,
            n_actions,
            np.asarray(tensors["base_mean"], dtype=np.float64),
            np.asarray(tensors["base_scale"], dtype=np.float64),
            np.asarray(tensors["base"], dtype=np.float64),
        )

    @classmethod
    def from_trees(
        cls,
        trees: tuple[IntArray, FloatArray, FloatArray],
        n_context: int,
        n_actions: int,
        base: tuple[FloatArray, FloatArray, FloatArray] | None = None,
    ) -> FrozenBoostedEnsemble:
        """The padded ``(features, thresholds, values)`` (as
        :func:`~banditree.models.boosted.model_text.padded_trees` gives them) over the
        linear ``base`` (mean, scale, weights; None: zeros), uncertainties zero."""
        features, thresholds, values = trees
        if base is None:
            base = (np.zeros(n_context), np.ones(n_context), np.zeros((n_actions, n_context + 1)))
        return cls(features, thresholds, values, np.zeros_like(values), n_context, n_actions, *base)

    @classmethod
    def from_dump(
        cls,
        dump: dict[str, Any],
        depth: int,
        n_context: int,
        n_actions: int,
        base: tuple[FloatArray, FloatArray, FloatArray] | None = None,
    ) -> FrozenBoostedEnsemble:
        """The padded arrays of LightGBM's ``Booster.dump_model()`` (numerical splits only,
        no missing-value routing: the inputs are finite) over the linear ``base``
        (mean, scale, weights; None: zeros)."""
        trees = dump["tree_info"]
        n = (1 << depth) - 1
        features = np.zeros((len(trees), n), dtype=np.int64)
        thresholds = np.full((len(trees), n), np.inf)
        values = np.zeros((len(trees), n + 1))
        for t, info in enumerate(trees):
            _fill(info["tree_structure"], 0, 0, depth, features[t], thresholds[t], values[t])
        if base is None:
            base = (np.zeros(n_context), np.ones(n_context), np.zeros((n_actions, n_context + 1)))
        return cls(features, thresholds, values, np.zeros_like(values), n_context, n_actions, *base)


def _fill(
    node: dict[str, Any],
    index: int,
    level: int,
    depth: int,
    features: IntArray,
    thresholds: FloatArray,
    values: FloatArray,
) -> None:
    """Write ``node`` (a dumped tree's node) at position ``index`` of level ``level``."""
    if "leaf_value" in node:  # a leaf: its value on every leaf of the padded subtree
        first = index
        for _ in range(depth - level):
            first = 2 * first + 1
        width = 1 << (depth - level)
        leaf = first - ((1 << depth) - 1)
        values[leaf : leaf + width] = float(node["leaf_value"])
        return  # the padded splits keep feature 0, threshold +inf: always LEFT
    if level >= depth:
        raise ValueError(f"a dumped tree is deeper than {depth}")
    if node.get("decision_type", "<=") != "<=":
        raise ValueError(f"only numerical '<=' splits are served, got {node['decision_type']!r}")
    features[index] = int(node["split_feature"])
    thresholds[index] = float(node["threshold"])
    _fill(node["left_child"], 2 * index + 1, level + 1, depth, features, thresholds, values)
    _fill(node["right_child"], 2 * index + 2, level + 1, depth, features, thresholds, values)


def leaf_positions(dump: dict[str, Any], depth: int) -> IntArray:
    """``(T, 2**depth)``: the flat padded leaf (``t * 2**depth + j``) of each LightGBM
    leaf index of each dumped tree (what ``Booster.predict(pred_leaf=True)`` returns),
    so that LightGBM can route the fitted rows in place of :meth:`route`."""
    trees = dump["tree_info"]
    width = 1 << depth
    out = np.zeros((len(trees), width), dtype=np.int64)
    for t, info in enumerate(trees):
        stack: list[tuple[dict[str, Any], int, int]] = [(info["tree_structure"], 0, 0)]
        while stack:
            node, index, level = stack.pop()
            if "leaf_value" in node:
                first = index
                for _ in range(depth - level):
                    first = 2 * first + 1
                out[t, int(node.get("leaf_index", 0))] = t * width + first - (width - 1)
                continue
            stack.append((node["left_child"], 2 * index + 1, level + 1))
            stack.append((node["right_child"], 2 * index + 2, level + 1))
    return out
