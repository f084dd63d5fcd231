"""Dense soft-tree ensemble: every node of every tree, ordinary autograd.

The reference the conditional passes are tested against, and, with the logistic
activation, the soft-tree baseline of the paper's timing experiment (figure 3).
Cost ``O(2**d (p + k))`` per example and tree, whatever the routing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from banditree.models.tel.function import depth_of
from banditree.models.tel.smooth_step import smooth_step

Activation = Callable[[Tensor], Tensor]


def leaf_probabilities(s_left: Tensor, depth: int) -> Tensor:
    """``P(x -> l)`` for every leaf from every node's LEFT probability, level by level.

    Shape: ``s_left`` ``(..., 2**d - 1)`` in breadth-first order -> ``(..., 2**d)``.
    """
    lead = s_left.shape[:-1]
    prob = s_left.new_ones((*lead, 1))
    for level in range(depth):
        s = s_left[..., (1 << level) - 1 : (1 << (level + 1)) - 1]  # (..., 2**level)
        prob = torch.stack((prob * s, prob * (1 - s)), dim=-1).reshape(*lead, 1 << (level + 1))
    return prob


def dense_tree_ensemble(
    x: Tensor, node_weights: Tensor, leaf_weights: Tensor, activation: Activation
) -> Tensor:
    """Per-tree outputs ``sum_l P(x -> l) o_l`` over ALL leaves: ``(B, m, k)``.

    Shape: ``x`` ``(B, p)``, ``node_weights`` ``(m, 2**d - 1, p)``, ``leaf_weights``
    ``(m, 2**d, k)``.
    """
    depth = depth_of(node_weights)
    z = torch.einsum("bp,mip->bmi", x, node_weights)  # (B, m, 2**d - 1)
    prob = leaf_probabilities(activation(z), depth)  # (B, m, 2**d)
    return torch.einsum("bml,mlk->bmk", prob, leaf_weights)


def dense_smooth_step_ensemble(
    x: Tensor, node_weights: Tensor, leaf_weights: Tensor, gamma: float
) -> Tensor:
    """:func:`dense_tree_ensemble` with the smooth-step activation (same maths as TEL)."""
    return dense_tree_ensemble(x, node_weights, leaf_weights, lambda z: smooth_step(z, gamma))


def dense_reachable_leaf_counts(x: Tensor, node_weights: Tensor, gamma: float) -> Tensor:
    """Leaves with ``P(x -> l) > 0`` per sample, summed over trees, the dense way: ``(B,)``."""
    with torch.no_grad():
        z = torch.einsum("bp,mip->bmi", x, node_weights)
        prob = leaf_probabilities(smooth_step(z, gamma), depth_of(node_weights))
        return (prob > 0).sum(dim=(1, 2))
