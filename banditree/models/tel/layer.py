"""The Tree Ensemble Layer (TEL) as a torch module (seed 003, sections 2-3)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from banditree.models.tel.checks import INIT_BOUND, MAX_DEPTH, check_depth, check_gamma
from banditree.models.tel.dense import dense_smooth_step_ensemble
from banditree.models.tel.function import tree_ensemble

__all__ = ["INIT_BOUND", "MAX_DEPTH", "TEL", "check_depth", "check_gamma"]


class TEL(nn.Module):
    """An additive ensemble of ``n_trees`` soft trees with smooth-step routing.

    Internal node ``i`` sends ``x`` LEFT with probability ``S(<w_i, x>)`` (no bias:
    put a normalisation layer in front); a tree outputs ``sum_l P(x -> l) o_l``.
    Training uses the conditional forward and backward passes (Algorithms 1 and 2),
    which only visit nodes the batch reaches.

    Parameters
    ----------
    in_features
        Input width ``p``.
    out_features
        Output width ``k`` of every tree.
    n_trees
        Number of trees ``m``.
    depth
        Depth ``d`` of every tree in ``[1, 12]``: ``2**d - 1`` internal nodes, ``2**d`` leaves.
    gamma
        Smooth-step width (``> 0``); the paper tunes it in ``[1e-4, 1]``.
    sum_outputs
        Sum the trees (output ``(B, k)``), or return them per tree (``(B, m, k)``).
    conditional
        ``False`` evaluates every node with ordinary autograd (the dense reference).

    Attributes
    ----------
    mean_reachable_leaves : float
        Reachable leaves per sample and tree in the last forward pass (1.0 means
        every tree routed every sample to a single leaf).

    Shape:
        input ``(B, p)``; output ``(B, k)``, or ``(B, m, k)`` when ``sum_outputs`` is false.

    Examples
    --------
    >>> layer = TEL(8, 3, n_trees=4, depth=5, gamma=0.5)
    >>> model = nn.Sequential(nn.BatchNorm1d(8), layer)
    >>> model(torch.randn(32, 8)).shape
    torch.Size([32, 3])
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        n_trees: int = 1,
        depth: int = 3,
        gamma: float = 1.0,
        *,
        sum_outputs: bool = True,
        conditional: bool = True,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        for name, value in (
            ("in_features", in_features),
            ("out_features", out_features),
            ("n_trees", n_trees),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.in_features = in_features
        self.out_features = out_features
        self.n_trees = n_trees
        self.depth = check_depth(depth)
        self.gamma = check_gamma(gamma)
        self.sum_outputs = sum_outputs
        self.conditional = conditional
        self.node_weights = nn.Parameter(
            torch.empty(n_trees, (1 << depth) - 1, in_features, dtype=dtype)
        )
        self.leaf_weights = nn.Parameter(
            torch.empty(n_trees, 1 << depth, out_features, dtype=dtype)
        )
        self.mean_reachable_leaves = float("nan")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Both weight sets ``U(-0.01, 0.01)``, as in the paper's reference implementation."""
        nn.init.uniform_(self.node_weights, -INIT_BOUND, INIT_BOUND)
        nn.init.uniform_(self.leaf_weights, -INIT_BOUND, INIT_BOUND)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"n_trees={self.n_trees}, depth={self.depth}, gamma={self.gamma}, "
            f"sum_outputs={self.sum_outputs}, conditional={self.conditional}"
        )

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(
                f"input must have shape (batch, {self.in_features}), got {tuple(x.shape)}"
            )
        if self.conditional:
            out, counts = tree_ensemble(x, self.node_weights, self.leaf_weights, self.gamma)
            self.mean_reachable_leaves = (
                float(counts.sum()) / (x.shape[0] * self.n_trees) if x.shape[0] else float("nan")
            )
        else:
            out = dense_smooth_step_ensemble(x, self.node_weights, self.leaf_weights, self.gamma)
        return out.sum(dim=1) if self.sum_outputs else out
