"""Algorithms 1 and 2 over every node of a small TEL, for the examples of one update.

The dense counterpart of :meth:`FrozenTEL.route` and :meth:`FrozenTEL.gradients`
(:mod:`.frozen`): at the size where the forward pass computes every node
(:attr:`FrozenTEL.dense`), a batch of a few examples costs a fixed handful of
whole-array numpy calls per level instead of the index bookkeeping of the reachable
entries.  An unreachable node has ``P(x -> n) = 0`` and a hard one ``S' = 0``, so
the extra entries add exact zeros: the gradients are those of the conditional pass
(up to the order of floating-point sums).

Layout as in the dense forward passes: every node level after level in position
order (the children of position ``i`` of a level of ``E`` nodes are ``i`` and
``i + E``), probabilities carried as ``4**level P`` (the steps ``4 S`` and
``4 (1 - S)`` are exact scalings of ``S``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from banditree.core.arrays import FloatArray

if TYPE_CHECKING:
    from banditree.models.tel.frozen import FrozenTEL


@dataclass(frozen=True)
class DensePass:
    """What the dense backward pass reads from the forward pass of a batch ``(B, p)``.

    ``square`` ``(B, nodes)``: ``v**2`` of the clipped ``v = 2 <w, x> / gamma``;
    ``left`` ``(B, nodes)``: ``S`` of every node; ``reach`` ``(B, nodes)``: ``4**level
    P(x -> node)``; ``leaves`` ``(B, leaves)``: ``4**depth P(x -> leaf)``, leaves in
    position order; ``output`` ``(B, k)``: the summed outputs.
    """

    square: FloatArray
    left: FloatArray
    reach: FloatArray
    leaves: FloatArray
    output: FloatArray


def dense_forward(frozen: FrozenTEL, x: FloatArray) -> DensePass:
    """Every node's step and reach probability for the rows of ``x`` ``(B, p)``."""
    v = x @ frozen._double_nodes_t  # (B, nodes)
    np.clip(v, -1.0, 1.0, out=v)
    square = v * v
    odd = np.subtract(3.0, square)
    odd *= v  # 4 S = 2 + odd, 4 (1 - S) = 2 - odd
    batch, m = x.shape[0], frozen.n_trees
    steps = np.empty((batch, 2, v.shape[1]))
    np.add(2.0, odd, out=steps[:, 0])
    np.subtract(2.0, odd, out=steps[:, 1])
    reach = np.empty_like(v)
    reach[:, :m] = 1.0
    prob = steps[:, :, :m].reshape(batch, -1)
    for span in frozen._spans:  # the levels below the root
        reach[:, span] = prob
        prob = (steps[:, :, span] * prob[:, None, :]).reshape(batch, -1)
    left = steps[:, 0] * 0.25  # a new array: prob may be a view of steps (depth 1)
    return DensePass(square, left, reach, prob, prob @ frozen._scaled_leaves_t.T)


def dense_gradients(
    frozen: FrozenTEL, x: FloatArray, forward: DensePass, grad_out: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``d loss / d node_weights`` and ``d loss / d leaf_weights``, summed over the batch.

    ``grad_out`` ``(B, k)`` is ``d loss / d output`` per row.  ``V(n) = sum_l P(n -> l)
    <grad_out, o_l>`` is carried up level by level (``V = V(right) + S (V(left) -
    V(right))``); a node's ``d loss / d <w, x> = P(x -> n) S' (V(left) - V(right))``
    with ``S' = 3/2 (1 - v**2) / gamma``, and every node's gradient is one product of
    those with the contexts.
    """
    m, n_int, p = frozen.node_weights.shape
    depth = frozen.depth
    value = grad_out @ frozen._leaves.T  # (B, leaves): V(leaf)
    diff = np.empty_like(forward.reach)  # V(left) - V(right) of every node
    left = forward.left
    for level in range(depth - 1, -1, -1):
        span = slice(m * ((1 << level) - 1), m * ((2 << level) - 1))
        width = m << level
        right = value[:, width:]
        np.subtract(value[:, :width], right, out=diff[:, span])
        value = left[:, span] * diff[:, span]
        value += right
    # d loss / d <w, x> = 4**-level reach * 3/2 (1 - v**2) / gamma * diff
    slope = np.subtract(1.0, forward.square)
    slope *= forward.reach
    slope *= diff
    slope *= _level_scale(m, depth, frozen.gamma)
    grad_w = np.empty((m * n_int, p))
    grad_w[frozen._node_rows] = slope.T @ x
    grad_leaves = np.empty_like(frozen._leaves)
    grad_leaves[frozen._orders[-1]] = forward.leaves.T @ grad_out
    grad_leaves *= 0.25**depth
    return grad_w.reshape(m, n_int, p), grad_leaves.reshape(frozen.leaf_weights.shape)


def _level_scale(m: int, depth: int, gamma: float) -> FloatArray:
    """``4**-level * 3/2 / gamma`` of every node, in the dense order."""
    return np.repeat(0.25 ** np.arange(depth) * (1.5 / gamma), m << np.arange(depth))
