"""Fused mini-batch loss and gradients of a DGT for supervised training, without autograd.

The same numbers as :class:`~banditree.models.dgt.tree.DGTree` under autograd
(Algorithm 2: the hard leaf row forward; ``theta`` gets the hard choice's gradient,
the node weights the softmax surrogate's with the straight-through window
``|a| <= 1``), computed in a handful of dense products:

* path scores ``q = sign(a) S^T`` with the dense path matrix ``S`` (one product
  instead of ``h`` reshapes), reached leaf ``argmax q`` (the unique leaf with ``q = h``);
* the adjoint ``dq S`` for the node gradient;
* above height :data:`DENSE_PATH_MAX_HEIGHT` the two products cost ``O(4**h)`` per row and
  the level-by-level forms (``O(h 2**h)``) take over (:class:`PathAlgebra`);
* the cross-entropy / squared-loss gradient written out, so no graph is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from banditree.models.dgt.spec import path_matrix
from banditree.models.dgt.tree_function import path_scores_adjoint_t, path_scores_t

TreeLoss = Literal["cross_entropy", "squared"]


#: Largest height whose path algebra uses the dense matrix (measured faster up to here).
DENSE_PATH_MAX_HEIGHT = 8


def path_matrix_t(height: int, device: torch.device | str = "cpu") -> Tensor:
    """The dense path matrix ``S`` ``(2**h, 2**h - 1)`` as a float32 tensor on ``device``."""
    return torch.tensor(path_matrix(height), dtype=torch.float32, device=device)


class PathAlgebra:
    """Path scores ``q = sign S^T`` and their adjoint ``dq S`` for one tree height."""

    def __init__(self, height: int, device: torch.device | str = "cpu", dense: bool | None = None):
        self.height = height
        use_dense = height <= DENSE_PATH_MAX_HEIGHT if dense is None else dense
        self.matrix = path_matrix_t(height, device) if use_dense else None

    def scores(self, sign: Tensor) -> Tensor:
        """``(B, 2**h - 1)`` signs -> ``(B, 2**h)`` path scores."""
        if self.matrix is not None:
            return sign @ self.matrix.T
        return path_scores_t(sign, self.height)

    def adjoint(self, dq: Tensor) -> Tensor:
        """``(B, 2**h)`` -> ``(B, 2**h - 1)``: ``d loss / d sign`` from ``d loss / d q``."""
        if self.matrix is not None:
            return dq @ self.matrix
        return path_scores_adjoint_t(dq, self.height)


def tree_loss_and_grads(
    layers: Sequence[Tensor],
    theta: Tensor,
    z0: Tensor,
    targets: Tensor,
    loss: TreeLoss,
    path: PathAlgebra,
) -> tuple[Tensor, list[Tensor], Tensor]:
    """Mean mini-batch loss and its gradients for every node layer and ``theta``.

    Parameters
    ----------
    layers
        ``W^(1) .. W^(L)``; ``W^(1)`` takes ``d + 1`` inputs (bias last).
    theta
        Leaf rows ``(2**h, K)``.
    z0
        Inputs with the bias column appended, ``(B, d + 1)``.
    targets
        Class indices ``(B,)`` (``cross_entropy``) or scaled targets ``(B, 1)`` (``squared``).
    loss
        ``"cross_entropy"`` (softmax over the leaf row) or ``"squared"`` (mean squared error).
    path
        :class:`PathAlgebra` of the tree's height.

    Returns
    -------
    (loss, layer gradients, theta gradient)
        The loss is a 0-d tensor (no penalty), gradients match ``layers`` and ``theta``.
    """
    zs = [z0]
    for w in layers[:-1]:
        zs.append(zs[-1] @ w.T)
    a = zs[-1] @ layers[-1].T  # (B, n_int)
    sign = a.gt(0).to(a.dtype).mul_(2.0).sub_(1.0)  # +1 RIGHT (a > 0), -1 LEFT
    q = path.scores(sign)  # (B, n_leaves), integers in [-h, h]
    leaves = q.argmax(dim=1)
    out = theta[leaves]  # (B, K)
    batch = z0.shape[0]
    if loss == "cross_entropy":
        log_p = torch.log_softmax(out, dim=1)
        value = -log_p.gather(1, targets[:, None]).mean()
        g = log_p.exp_()
        g[torch.arange(batch, device=g.device), targets] -= 1.0
        g /= batch
    else:
        resid = out - targets
        value = resid.square().mean()
        g = resid * (2.0 / resid.numel())
    grad_theta = torch.zeros_like(theta).index_add_(0, leaves, g)
    p = torch.softmax(q, dim=1)
    u = g @ theta.T  # (B, n_leaves)
    dq = p * (u - (p * u).sum(dim=1, keepdim=True))
    delta = path.adjoint(dq).mul_(a.abs().le_(1.0))  # (B, n_int): straight-through window
    grads: list[Tensor] = [delta.new_empty(0)] * len(layers)
    for i in range(len(layers) - 1, -1, -1):
        grads[i] = delta.T @ zs[i]
        if i:
            delta = delta @ layers[i]
    return value, grads, grad_theta
