"""Torch autograd form of random hinge forests and ferns (seed 001, eqs. 10-12).

Four layers, as in ``torch.nn``: a pure tensor helper (:func:`hinge_traverse_t`), an
``autograd.Function`` (:class:`HingeForestFunction`), a functional wrapper
(:func:`hinge_forest`) and the modules in :mod:`banditree.models.hinge.modules`.
Conventions (node order, ties, leaf numbering) are those of
:mod:`banditree.models.hinge.ops`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

REDUCTIONS = ("none", "sum", "mean")


def hinge_traverse_t(
    z: Tensor, features: Tensor, thresholds: Tensor, depth: int, ferns: bool = False
) -> tuple[Tensor, Tensor, Tensor]:
    """Algorithm 3 vectorised over the batch and the trees (torch twin of ``hinge_traverse``).

    Shape:
        ``z`` ``(B, F)``; ``features`` (long), ``thresholds`` ``(T, N)`` ->
        ``leaf`` ``(B, T)``, signed margin ``r*`` ``(B, T)``, arg-min decision ``v*`` ``(B, T)``.
    """
    n_examples, n_trees = z.shape[0], features.shape[0]
    if ferns:
        r = z[:, features] - thresholds  # (B, T, D)
        powers = 1 << torch.arange(depth - 1, -1, -1, device=z.device)
        leaf = ((r > 0).long() * powers).sum(dim=2)
        arg = r.abs().argmin(dim=2)  # the first minimum: ties keep the shallowest
        return leaf, r.gather(2, arg[..., None])[..., 0], arg
    trees = torch.arange(n_trees, device=z.device)
    node = z.new_zeros((n_examples, n_trees), dtype=torch.long)
    best_margin = z.new_full((n_examples, n_trees), float("inf"))
    best_node = torch.zeros_like(node)
    for _ in range(depth):
        r = z.gather(1, features[trees, node]) - thresholds[trees, node]  # (B, T)
        closer = r.abs() < best_margin.abs()
        best_margin = torch.where(closer, r, best_margin)
        best_node = torch.where(closer, node, best_node)
        node = 2 * node + 1 + (r > 0).long()
    return node - ((1 << depth) - 1), best_margin, best_node


class HingeForestFunction(torch.autograd.Function):
    """Forward: per-tree outputs ``w[m, leaf] * |r*|``. Backward: the sparse eqs. 11-12."""

    @staticmethod
    def forward(
        ctx: Any,
        z: Tensor,
        thresholds: Tensor,
        weights: Tensor,
        features: Tensor,
        depth: int,
        ferns: bool,
    ) -> Tensor:
        # z: (B, F), thresholds: (T, N), weights: (T, L, K), features: (T, N) -> (B, T, K)
        leaf, margin, node = hinge_traverse_t(z, features, thresholds, depth, ferns)
        ctx.save_for_backward(weights, features, leaf, margin, node)
        ctx.n_inputs = z.shape[1]
        trees = torch.arange(weights.shape[0], device=z.device)
        return weights[trees, leaf] * margin.abs()[..., None]

    @staticmethod
    def backward(
        ctx: Any, grad_out: Tensor
    ) -> tuple[Tensor | None, Tensor | None, Tensor | None, None, None, None]:
        weights, features, leaf, margin, node = ctx.saved_tensors
        n_trees, n_leaves, n_out = weights.shape
        trees = torch.arange(n_trees, device=grad_out.device)
        grad_z = grad_t = grad_w = None
        if ctx.needs_input_grad[2]:
            flat = (trees * n_leaves + leaf).reshape(-1)  # (B * T,)
            contrib = (margin.abs()[..., None] * grad_out).reshape(-1, n_out)  # (B * T, K)
            grad_w = weights.new_zeros((n_trees * n_leaves, n_out)).index_add_(0, flat, contrib)
            grad_w = grad_w.view_as(weights)
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            # sign(r*) w_leaf . grad: the one non-zero threshold / input entry per tree
            signed = margin.sign() * (weights[trees, leaf] * grad_out).sum(dim=2)  # (B, T)
            if ctx.needs_input_grad[1]:
                flat = (trees * features.shape[1] + node).reshape(-1)
                grad_t = margin.new_zeros(features.numel()).index_add_(0, flat, -signed.reshape(-1))
                grad_t = grad_t.view(features.shape)
            if ctx.needs_input_grad[0]:
                index = features[trees, node]  # (B, T) input feature of v*
                grad_z = margin.new_zeros((margin.shape[0], ctx.n_inputs)).scatter_add_(
                    1, index, signed
                )
        return grad_z, grad_t, grad_w, None, None, None


def hinge_forest(
    z: Tensor,
    thresholds: Tensor,
    weights: Tensor,
    features: Tensor,
    depth: int,
    ferns: bool = False,
    reduction: str = "sum",
) -> Tensor:
    """Random hinge forest on standardised inputs ``z``.

    Parameters
    ----------
    z
        Inputs ``(B, F)``, standardised (thresholds are in standard deviations).
    thresholds, features
        ``(T, N)`` learnable thresholds and fixed feature indices (long).
    weights
        Leaf weights ``(T, 2**D, K)``.
    depth, ferns
        Tree depth ``D``; ferns share one decision per depth level (``N = D``).
    reduction
        ``"sum"`` or ``"mean"`` over trees -> ``(B, K)``; ``"none"`` -> ``(B, T, K)``
        for a following layer.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    out: Tensor = HingeForestFunction.apply(z, thresholds, weights, features, depth, ferns)
    if reduction == "sum":
        return out.sum(dim=1)
    if reduction == "mean":
        return out.mean(dim=1)
    return out
