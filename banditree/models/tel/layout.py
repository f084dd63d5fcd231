"""Where every node and leaf of a TEL sits in the numpy passes (see :mod:`.frozen`).

The layout depends on the number of trees and the depth only, so one is built per
shape and shared by every parameter version (a learner freezes a new version after
each update).  Its arrays are shared: never written to (they are not flagged
read-only because numpy's ``take`` copies a read-only index array on every call).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from banditree.core.arrays import IntArray


@dataclass(frozen=True)
class TreeLayout:
    """Index arrays of ``m`` perfect trees of depth ``d`` in storage (position) order.

    ``orders[l]`` maps the positions of level ``l`` (``l = d``: the leaves) to columns
    ``tree * 2**l + node within the level``; the children of position ``i`` of a level
    of ``E`` nodes are positions ``i`` (LEFT) and ``i + E`` (RIGHT) of the next.
    ``node_rows`` lists every node, level after level in position order, as its row of
    ``node_weights.reshape(m (2**d - 1), p)``; ``level_spans[l]`` is level ``l`` among
    them.  ``paths[l, j]`` is the step leaf position ``j`` takes at level ``l``: an
    entry of ``[S of every node, 1 - S of every node]`` in that node order.
    """

    orders: tuple[IntArray, ...]
    node_rows: IntArray
    level_spans: tuple[slice, ...]
    paths: IntArray


@lru_cache(maxsize=64)
def tree_layout(n_trees: int, depth: int) -> TreeLayout:
    """The (cached, shared) layout of ``n_trees`` perfect trees of depth ``depth``."""
    m, n_int = n_trees, (1 << depth) - 1
    order = np.arange(m, dtype=np.int64)  # level 0: column = tree
    orders, rows = [], []
    for lv in range(depth):
        orders.append(order)
        # column c = tree * 2**lv + j is row tree * (2**d - 1) + 2**lv - 1 + j
        rows.append((order >> lv) * n_int + (1 << lv) - 1 + (order & ((1 << lv) - 1)))
        order = np.concatenate((2 * order, 2 * order + 1))  # children: i and i + E
    orders.append(order)
    n_nodes, n_leaves = m * n_int, m << depth
    paths = np.empty((depth, n_leaves), dtype=np.int64)
    position = np.arange(n_leaves)
    for lv in range(depth - 1, -1, -1):
        width = m << lv  # nodes of level lv; leaf position j descends through j mod width
        node = position % width
        right = (position // width) % 2
        paths[lv] = m * ((1 << lv) - 1) + node + right * n_nodes
        position = node
    return TreeLayout(
        orders=tuple(orders),
        node_rows=np.concatenate(rows),
        level_spans=tuple(slice(m * ((1 << lv) - 1), m * ((2 << lv) - 1)) for lv in range(depth)),
        paths=paths,
    )
