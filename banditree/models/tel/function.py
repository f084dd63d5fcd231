"""Conditional forward and backward passes of the Tree Ensemble Layer (seed 003, section 3).

Four layers, as in ``torch.nn``: pure tensor helpers (:func:`route_conditional`,
:func:`backward_conditional`), an ``autograd.Function`` (:class:`TreeEnsembleFunction`)
and a functional wrapper (:func:`tree_ensemble`); the module is
:class:`~banditree.models.tel.layer.TEL`.

Layout: ``m`` perfect trees of depth ``d``; internal nodes in breadth-first order
(children of node ``i`` are ``2i+1`` LEFT and ``2i+2`` RIGHT), leaves numbered left
to right.  Node ``i`` sends ``x`` LEFT with probability ``S(<w_i, x>)``.

Both passes run on the whole batch at once, one level at a time, over the list of
(sample, tree, node) triples that are *reachable* (Algorithm 1).  A node whose
activation is fractional (``0 < S < 1``) gets an id in the *fractional tree*
(Definition 1); each reachable triple carries a ``link``, the slot ``2 f + side`` of
its closest fractional ancestor ``f``.  The backward pass (Algorithm 2) scatters the
leaf terms ``g(l)`` into those slots and folds the fractional nodes bottom-up, level
by level, which is the post-order traversal of the fractional tree done for all
samples at once; only fractional nodes do ``O(p)`` work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from banditree.models.tel.smooth_step import smooth_step, smooth_step_derivative
from banditree.models.tel.sparse import pair_matmul, pair_matmul_transposed, sampled_dot


@dataclass(frozen=True)
class Routing:
    """What the conditional forward pass keeps for the backward pass.

    ``U`` reachable (sample, tree, leaf) triples and ``F`` fractional (sample, tree,
    node) triples; fractional ids ``0 .. F-1`` are in level order, level ``l`` holding
    ids ``level_starts[l] .. level_starts[l + 1] - 1``.  Link slot ``2 F`` means "no
    fractional ancestor".  Both lists are sample-major (sorted by sample, then tree,
    then node), which the sparse kernels of :mod:`~banditree.models.tel.sparse` need.
    """

    leaf_sample: Tensor  # (U,) sample index
    leaf_column: Tensor  # (U,) sample * m + tree: row of the per-tree output
    leaf_row: Tensor  # (U,) tree * 2**d + leaf: row of the flattened leaf weights
    leaf_prob: Tensor  # (U,) P(x -> l) > 0
    leaf_link: Tensor  # (U,) slot of the closest fractional ancestor
    frac_sample: Tensor  # (F,)
    frac_row: Tensor  # (F,) tree * (2**d - 1) + node: row of the flattened node weights
    frac_level_column: Tensor  # (F,) tree * 2**l + (node - 2**l + 1): row within its level
    frac_z: Tensor  # (F,) <w_i, x>, inside the fractional region
    frac_link: Tensor  # (F,) slot of the closest fractional ancestor
    level_starts: tuple[int, ...]  # (d + 1,)


def _accumulate(target: Tensor, index: Tensor, source: Tensor) -> None:
    """``target[index[j]] += source[j]`` in place (duplicates add up).

    ``index_put_`` with ``accumulate`` rather than ``index_add_``: on CPU the latter
    parallelises even tiny scatters, which stalls when the cores are busy.
    """
    target.index_put_((index,), source, accumulate=True)


def depth_of(node_weights: Tensor) -> int:
    """Tree depth from node weights ``(m, 2**d - 1, p)``."""
    n_internal = node_weights.shape[1]
    depth = (n_internal + 1).bit_length() - 1
    if (1 << depth) - 1 != n_internal or depth < 1:
        raise ValueError(f"node_weights must have 2**d - 1 rows per tree, got {n_internal}")
    return depth


def _interleave(left: Tensor, right: Tensor) -> Tensor:
    """``[left[0], right[0], left[1], right[1], ...]``: children stay sample-major."""
    return torch.stack((left, right), 1).reshape(-1)


def route_conditional(x: Tensor, node_weights: Tensor, gamma: float) -> Routing:
    """Algorithm 1 for a batch: visit only reachable nodes, level by level.

    The reachable triples of a level are a sample-major list of (sample, column)
    pairs, column ``tree * 2**l + position in the level``; their ``<w_i, x>`` is one
    sampled product (:func:`~banditree.models.tel.sparse.sampled_dot`), and the
    children of column ``c`` are columns ``2c`` (LEFT) and ``2c + 1`` (RIGHT).

    Shape: ``x`` ``(B, p)``, ``node_weights`` ``(m, 2**d - 1, p)``.
    """
    n_trees, n_internal, p = node_weights.shape
    depth = depth_of(node_weights)
    batch = x.shape[0]
    dev = x.device
    sample = torch.arange(batch, device=dev).repeat_interleave(n_trees)
    column = torch.arange(n_trees, device=dev).repeat(batch)
    link = torch.full_like(sample, -1)  # closest fractional ancestor's slot; -1 = none yet
    prob = x.new_ones(batch * n_trees)
    frac_parts: list[tuple[Tensor, Tensor, Tensor, Tensor, Tensor]] = []
    level_starts = [0]
    for level in range(depth):
        level_first = (1 << level) - 1
        w_level = node_weights[:, level_first : 2 * level_first + 1].reshape(-1, p)
        z = sampled_dot(sample, column, x, w_level)  # (E,)
        s_left = smooth_step(z, gamma)
        go_left, go_right = s_left > 0, s_left < 1
        is_frac = go_left & go_right
        frac = torch.nonzero(is_frac).squeeze(1)
        first = level_starts[-1]
        frac_column = column[frac]
        frac_row = (frac_column >> level) * n_internal + level_first + (frac_column & level_first)
        frac_parts.append((sample[frac], frac_row, frac_column, z[frac], link[frac]))
        level_starts.append(first + frac.numel())
        # a fractional node's children link to its slots 2 id (LEFT) and 2 id + 1 (RIGHT)
        own_slot = torch.where(is_frac, 2 * (first - 1 + torch.cumsum(is_frac, 0)), link)
        keep = torch.nonzero(_interleave(go_left, go_right)).squeeze(1)
        parent, side = keep >> 1, keep & 1
        sample = sample[parent]
        column = 2 * column[parent] + side
        link = torch.where(is_frac[parent], own_slot[parent] + side, link[parent])
        s_parent = s_left[parent]
        prob = prob[parent] * torch.where(side.bool(), 1 - s_parent, s_parent)
    n_frac = level_starts[-1]
    frac_sample, frac_row, frac_level_column, frac_z, frac_link = (
        torch.cat(parts) for parts in zip(*frac_parts, strict=True)
    )
    none = 2 * n_frac
    return Routing(
        leaf_sample=sample,
        leaf_column=sample * n_trees + (column >> depth),
        leaf_row=column,
        leaf_prob=prob,
        leaf_link=torch.where(link < 0, none, link),
        frac_sample=frac_sample,
        frac_row=frac_row,
        frac_level_column=frac_level_column,
        frac_z=frac_z,
        frac_link=torch.where(frac_link < 0, none, frac_link),
        level_starts=tuple(level_starts),
    )


def output_conditional(routing: Routing, leaf_weights: Tensor, batch: int) -> Tensor:
    """Per-tree outputs ``sum_{l reachable} P(x -> l) o_l``: ``(B, m, k)``."""
    n_trees, n_leaves, k = leaf_weights.shape
    out = pair_matmul(
        routing.leaf_column,
        routing.leaf_row,
        routing.leaf_prob,
        leaf_weights.reshape(n_trees * n_leaves, k),
        batch * n_trees,
    )
    return out.reshape(batch, n_trees, k)


def backward_conditional(
    routing: Routing,
    grad_out: Tensor,
    x: Tensor,
    node_weights: Tensor,
    leaf_weights: Tensor,
    gamma: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Algorithm 2 (Theorem 1) for a batch: gradients for ``x``, node and leaf weights.

    Shape: ``grad_out`` ``(B, m, k)``; returns ``(B, p)``, ``(m, 2**d - 1, p)``,
    ``(m, 2**d, k)``.
    """
    n_trees, n_internal, p = node_weights.shape
    n_leaves, k = leaf_weights.shape[1:]
    g_flat = grad_out.reshape(-1, k)  # (B * m, k) dL/dT
    o_flat = leaf_weights.reshape(-1, k)
    grad_leaf = pair_matmul_transposed(
        routing.leaf_column, routing.leaf_row, routing.leaf_prob, g_flat, n_trees * n_leaves
    )
    # g(l) = P(x -> l) <dL/dT, o_l>
    g_leaf = routing.leaf_prob * sampled_dot(routing.leaf_column, routing.leaf_row, g_flat, o_flat)
    starts = routing.level_starts
    n_frac = starts[-1]
    # sum_g of the left / right child of every fractional node; the last slot is "none"
    sums = x.new_zeros(2 * n_frac + 1)
    _accumulate(sums, routing.leaf_link, g_leaf)
    pairs = sums[: 2 * n_frac].view(n_frac, 2)
    for level in range(len(starts) - 2, -1, -1):  # post-order: deepest fractional nodes first
        lo, hi = starts[level], starts[level + 1]
        if hi > lo:
            _accumulate(sums, routing.frac_link[lo:hi], pairs[lo:hi].sum(1))
    s_left = smooth_step(routing.frac_z, gamma)
    ds = smooth_step_derivative(routing.frac_z, gamma)
    coef = ds * (pairs[:, 0] / s_left - pairs[:, 1] / (1 - s_left))  # (F,) mu1 a - mu2 b
    grad_x = torch.zeros_like(x)
    for level in range(len(starts) - 1):  # per level: fractional triples are sample-major
        lo, hi = starts[level], starts[level + 1]
        w_level = node_weights[:, (1 << level) - 1 : (2 << level) - 1].reshape(-1, p)
        grad_x += pair_matmul(
            routing.frac_sample[lo:hi],
            routing.frac_level_column[lo:hi],
            coef[lo:hi],
            w_level,
            x.shape[0],
        )
    grad_w = pair_matmul_transposed(
        routing.frac_sample, routing.frac_row, coef, x, n_trees * n_internal
    )
    return (
        grad_x,
        grad_w.reshape(n_trees, n_internal, p),
        grad_leaf.reshape(n_trees, n_leaves, k),
    )


def reachable_leaf_counts(routing: Routing, batch: int) -> Tensor:
    """Reachable leaves per sample, summed over the trees: ``(B,)`` integers."""
    return torch.bincount(routing.leaf_sample, minlength=batch)


class TreeEnsembleFunction(torch.autograd.Function):
    """Conditional forward (Algorithm 1) and backward (Algorithm 2) of ``m`` soft trees."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, node_weights: Tensor, leaf_weights: Tensor, gamma: float
    ) -> tuple[Tensor, Tensor]:
        routing = route_conditional(x, node_weights, gamma)
        out = output_conditional(routing, leaf_weights, x.shape[0])
        counts = reachable_leaf_counts(routing, x.shape[0])
        ctx.mark_non_differentiable(counts)
        ctx.save_for_backward(x, node_weights, leaf_weights)
        ctx.routing = routing
        ctx.gamma = gamma
        return out, counts

    @staticmethod
    def backward(
        ctx: Any, grad_out: Tensor, _grad_counts: Tensor | None
    ) -> tuple[Tensor | None, Tensor | None, Tensor | None, None]:
        x, node_weights, leaf_weights = ctx.saved_tensors
        grad_x, grad_w, grad_o = backward_conditional(
            ctx.routing, grad_out.contiguous(), x, node_weights, leaf_weights, ctx.gamma
        )
        needs = ctx.needs_input_grad
        return (
            grad_x if needs[0] else None,
            grad_w if needs[1] else None,
            grad_o if needs[2] else None,
            None,
        )


def tree_ensemble(
    x: Tensor, node_weights: Tensor, leaf_weights: Tensor, gamma: float
) -> tuple[Tensor, Tensor]:
    """Per-tree outputs and reachable-leaf counts, with conditional computation.

    Parameters
    ----------
    x
        Inputs ``(B, p)``.
    node_weights
        ``(m, 2**d - 1, p)``: hyperplane ``w_i`` of every internal node (no bias).
    leaf_weights
        ``(m, 2**d, k)``: output vector ``o_l`` of every leaf.
    gamma
        Smooth-step width (``> 0``).

    Returns
    -------
    outputs, counts
        ``(B, m, k)`` tree outputs and ``(B,)`` reachable leaves per sample summed
        over the trees (an integer tensor, not differentiable).
    """
    out, counts = TreeEnsembleFunction.apply(x, node_weights, leaf_weights, gamma)
    return out, counts
