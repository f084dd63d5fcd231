"""LightGBM's trees read from its model text (``Booster.model_to_string``) into padded arrays.

The text holds each tree's nodes as arrays (``split_feature``, ``threshold``,
``decision_type``, ``left_child``, ``right_child``, ``leaf_value``: a child ``>= 0`` is an
internal node, ``~j`` leaf ``j``), written with every digit a double needs, as its JSON
dump (``Booster.dump_model``) writes them: the same numbers, without the dump's cost
(a tenth of a 20,000-row fit) nor a Python object per node.  The padded layout is
:class:`~banditree.models.boosted.frozen.FrozenBoostedEnsemble`'s: internal node ``i``
of a tree at row ``i`` (children ``2i + 1`` LEFT and ``2i + 2`` RIGHT), a leaf shallower
than the depth padded with splits of threshold ``+inf`` (always LEFT), its value on
every leaf below it.  All trees are placed together, one level at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

#: the arrays read from each tree's section
_KEYS = (
    "num_leaves",
    "split_feature",
    "threshold",
    "decision_type",
    "left_child",
    "right_child",
    "leaf_value",
)
#: decision_type's bit of a categorical split (LightGBM's kCategoricalMask)
_CATEGORICAL = 1


@dataclass(frozen=True)
class PaddedTrees:
    """``features`` ``(T, 2**D - 1)``, ``thresholds`` alike, ``values`` ``(T, 2**D)``, and
    ``positions`` ``(T, 2**D)``: the flat padded leaf (``t * 2**D + j``) of each of
    LightGBM's leaf indices (what ``Booster.predict(pred_leaf=True)`` returns)."""

    features: IntArray
    thresholds: FloatArray
    values: FloatArray
    positions: IntArray


def tree_sections(text: str) -> list[dict[str, str]]:
    """The ``key=value`` lines of each ``Tree=`` section of a model text, in order."""
    trees: list[dict[str, str]] = []
    body, found, _ = text.partition("\nend of trees")
    if not found:
        raise ValueError("not a LightGBM model text: no 'end of trees'")
    for section in body.split("\nTree=")[1:]:
        fields: dict[str, str] = {}
        for line in section.split("\n")[1:]:
            key, sep, value = line.partition("=")
            if sep and key in _KEYS:
                fields[key] = value
        trees.append(fields)
    return trees


def _ints(fields: dict[str, str], key: str) -> IntArray:
    return np.array(fields.get(key, "").split(), dtype=np.int64)


def _floats(fields: dict[str, str], key: str) -> FloatArray:
    return np.array(fields.get(key, "").split(), dtype=np.float64)


def _joined(parts: list[Any], dtype: type) -> Any:
    """The arrays end to end (none: an empty array of ``dtype``)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def padded_trees(text: str, depth: int) -> PaddedTrees:
    """The trees of a model text of numerical splits, padded to depth ``depth``.

    Raises
    ------
    ValueError
        A tree deeper than ``depth``, a categorical split, or arrays that disagree.
    """
    sections = tree_sections(text)
    n_trees, n, width = len(sections), (1 << depth) - 1, 1 << depth
    features = np.zeros((n_trees, n), dtype=np.int64)
    thresholds = np.full((n_trees, n), np.inf)
    values = np.zeros((n_trees, width))
    positions = np.zeros((n_trees, width), dtype=np.int64)
    # every tree's arrays end to end: internal node i of tree t is internal[t] + i, its
    # leaf j is leaves[t] + j
    split: list[Any] = []
    threshold: list[Any] = []
    kind: list[Any] = []
    left: list[Any] = []
    right: list[Any] = []
    leaf_value: list[Any] = []
    internal_at, leaf_at = np.zeros(n_trees, dtype=np.int64), np.zeros(n_trees, dtype=np.int64)
    n_internal = n_leaves = 0
    for t, fields in enumerate(sections):
        leaves = int(fields.get("num_leaves", "0"))
        arrays = (
            _ints(fields, "split_feature"),
            _floats(fields, "threshold"),
            _ints(fields, "decision_type"),
            _ints(fields, "left_child"),
            _ints(fields, "right_child"),
        )
        value = _floats(fields, "leaf_value")
        if leaves < 1 or value.shape != (leaves,) or any(a.shape != (leaves - 1,) for a in arrays):
            raise ValueError(f"tree {t} of the model text: arrays disagree with num_leaves")
        if leaves > width:
            raise ValueError(f"a tree of the model text is deeper than {depth}")
        for into, a in zip((split, threshold, kind, left, right), arrays, strict=True):
            into.append(a)  # each tree's arrays, joined below
        leaf_value.append(value)
        internal_at[t], leaf_at[t] = n_internal, n_leaves
        n_internal += leaves - 1
        n_leaves += leaves
    split_all, kind_all = _joined(split, np.int64), _joined(kind, np.int64)
    left_all, right_all = _joined(left, np.int64), _joined(right, np.int64)
    threshold_all, value_all = _joined(threshold, np.float64), _joined(leaf_value, np.float64)
    if (kind_all & _CATEGORICAL).any():
        raise ValueError("only numerical '<=' splits are served, got a categorical one")
    # the frontier of one level: each node's tree, its child code (>= 0: internal node,
    # ~j: leaf j, as LightGBM writes children) and its padded index
    single = np.array([len(v) == 1 for v in leaf_value], dtype=bool)
    tree = np.arange(n_trees, dtype=np.int64)
    code = np.where(single, -1, 0)  # a one-leaf tree's root is its leaf 0
    index = np.zeros(n_trees, dtype=np.int64)
    for level in range(depth + 1):
        leaf = code < 0
        if leaf.any():  # a leaf: its value on every padded leaf below it
            lt, li = tree[leaf], index[leaf]
            j = ~code[leaf]
            span = 1 << (depth - level)
            first = (li + 1) * span - 1 - n  # its first padded leaf
            flat = (lt * width + first)[:, None] + np.arange(span)[None, :]
            values.ravel()[flat] = value_all[leaf_at[lt] + j][:, None]
            positions[lt, j] = lt * width + first
        inner = ~leaf
        if not inner.any():
            break
        if level >= depth:
            raise ValueError(f"a tree of the model text is deeper than {depth}")
        it, ii = tree[inner], index[inner]
        node = internal_at[it] + code[inner]
        features[it, ii] = split_all[node]
        thresholds[it, ii] = threshold_all[node]
        tree = np.concatenate((it, it))
        code = np.concatenate((left_all[node], right_all[node]))
        index = np.concatenate((2 * ii + 1, 2 * ii + 2))
    return PaddedTrees(features, thresholds, values, positions)
