"""Torch autograd form of the DGT tree layer (Algorithm 2) for supervised training.

Four layers, as in ``torch.nn``: pure tensor helpers, an ``autograd.Function``, a
functional wrapper (:func:`hard_tree`), and the module (:class:`~banditree.models.dgt.tree.DGTree`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def path_scores_t(sign: Tensor, height: int) -> Tensor:
    """Torch twin of :func:`banditree.models.dgt.tree_ops.path_scores`."""
    lead = sign.shape[:-1]
    q = sign.new_zeros((*lead, 1))
    for depth in range(height):
        s = sign[..., (1 << depth) - 1 : (1 << (depth + 1)) - 1]
        q = torch.stack((q - s, q + s), dim=-1).reshape(*lead, 1 << (depth + 1))
    return q


def path_scores_adjoint_t(dq: Tensor, height: int) -> Tensor:
    """Adjoint of :func:`path_scores_t`: ``d loss / d sign`` from ``d loss / d q``.

    Shape: ``(..., 2**h)`` -> ``(..., 2**h - 1)``.
    """
    lead = dq.shape[:-1]
    parts = []
    acc = dq
    for depth in range(height - 1, -1, -1):
        pairs = acc.reshape(*lead, 1 << depth, 2)
        parts.append(pairs[..., 1] - pairs[..., 0])
        acc = pairs.sum(dim=-1)
    return torch.cat(parts[::-1], dim=-1)


def reached_leaves_t(a: Tensor, height: int) -> Tensor:
    """Leaf index reached by each row of node activations ``(B, n_int)`` -> ``(B,)``."""
    node = torch.zeros(a.shape[0], dtype=torch.long, device=a.device)
    for _ in range(height):
        go_right = a.gather(1, node[:, None])[:, 0] > 0
        node = 2 * node + 1 + go_right.long()
    return node - ((1 << height) - 1)


class HardTreeFunction(torch.autograd.Function):
    """Forward: the hard leaf row. Backward: Algorithm 2 with Remark 2."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, theta: Tensor, height: int) -> Tensor:
        # a: (B, n_int) activations, theta: (n_leaves, K) -> (B, K)
        leaves = reached_leaves_t(a, height)
        ctx.save_for_backward(a, theta, leaves)
        ctx.height = height
        return theta[leaves]

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        a, theta, leaves = ctx.saved_tensors
        height: int = ctx.height
        grad_a = grad_theta = None
        if ctx.needs_input_grad[0]:
            sign = torch.where(a > 0, 1.0, -1.0).to(a.dtype)
            p = torch.softmax(path_scores_t(sign, height), dim=-1)  # (B, n_leaves)
            u = grad_out @ theta.T  # (B, n_leaves)
            dq = p * (u - (p * u).sum(dim=-1, keepdim=True))
            grad_a = path_scores_adjoint_t(dq, height) * (a.abs() <= 1.0).to(a.dtype)
        if ctx.needs_input_grad[1]:
            grad_theta = torch.zeros_like(theta).index_add_(0, leaves, grad_out)
        return grad_a, grad_theta, None


def hard_tree(a: Tensor, theta: Tensor, height: int) -> Tensor:
    """Hard tree output for activations ``a`` ``(B, 2**h - 1)`` and leaves ``theta`` ``(2**h, K)``."""
    out: Tensor = HardTreeFunction.apply(a, theta, height)
    return out
