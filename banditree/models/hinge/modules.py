"""Random hinge forests and ferns as torch modules (seed 001, sections 3-4).

:class:`HingeForest` is the layer of algorithm 2 (random feature indices, learnable
thresholds and leaf weights); :class:`OnlineStandardize` is the paper's modified
batch normalisation that puts the thresholds in standard deviations; and
:class:`PooledHingeForest` chains a learnable inner-product feature pool, the
standardisation and the forest (the paper's Letter / USPS architecture, figure 2b,
with ``reduction="none"`` and a following linear layer).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from banditree.models.hinge.function import REDUCTIONS, hinge_forest, hinge_traverse_t
from banditree.models.hinge.ops import check_depth, n_decisions


class OnlineStandardize(nn.Module):
    """``(x - mean) / std`` with running statistics, identical in training and evaluation.

    In training mode each batch first updates the running mean and variance
    (exponential average with ``momentum``; the first batch sets them), then the
    batch is normalised with the running values.  The backward pass treats the mean
    and std as constants, as in the paper.

    Shape:
        input ``(B, F)``, output ``(B, F)``.
    """

    running_mean: Tensor
    running_var: Tensor
    n_batches_seen: Tensor

    def __init__(self, n_features: int, momentum: float = 0.01, eps: float = 1e-5) -> None:
        super().__init__()
        if not 0.0 < momentum <= 1.0:
            raise ValueError(f"momentum must be in (0, 1], got {momentum}")
        self.n_features = n_features
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(n_features))
        self.register_buffer("running_var", torch.ones(n_features))
        self.register_buffer("n_batches_seen", torch.zeros((), dtype=torch.long))

    def reset_parameters(self) -> None:
        self.running_mean.zero_()
        self.running_var.fill_(1.0)
        self.n_batches_seen.zero_()

    def extra_repr(self) -> str:
        return f"n_features={self.n_features}, momentum={self.momentum}, eps={self.eps}"

    def forward(self, x: Tensor) -> Tensor:
        if self.training and x.shape[0] > 1:
            with torch.no_grad():
                mean, var = x.mean(dim=0), x.var(dim=0)
                rate = 1.0 if int(self.n_batches_seen) == 0 else self.momentum
                self.running_mean.lerp_(mean, rate)
                self.running_var.lerp_(var, rate)
                self.n_batches_seen += 1
        return (x - self.running_mean) / torch.sqrt(self.running_var + self.eps)


class HingeForest(nn.Module):
    """``T`` random hinge trees (or ferns) of depth ``D`` on standardised inputs.

    Each decision compares one input, fixed at random (a buffer), with a learnable
    threshold; tree ``m`` outputs ``w[m, leaf] * |r*|`` (one leaf per tree, ``D``
    comparisons).  Gradients are the sparse eqs. 11-12.

    Parameters
    ----------
    n_inputs
        Input width ``F``.
    n_trees, depth
        ``T`` trees of depth ``D`` in ``[1, 12]`` (``2**D`` leaves each).
    n_outputs
        ``K``: each leaf holds a ``K``-vector (1 for the paper's scalar trees).
    ferns
        One (feature, threshold) per depth level instead of per node.
    reduction
        ``"sum"`` / ``"mean"`` over trees, or ``"none"`` to feed a following layer.

    Shape:
        input ``(B, F)``; output ``(B, K)``, or ``(B, T * K)`` with ``reduction="none"``.
    """

    features: Tensor

    def __init__(
        self,
        n_inputs: int,
        n_trees: int,
        depth: int,
        n_outputs: int = 1,
        ferns: bool = False,
        reduction: str = "sum",
    ) -> None:
        super().__init__()
        if min(n_inputs, n_trees, n_outputs) < 1:
            raise ValueError(
                f"n_inputs, n_trees and n_outputs must be >= 1, got {n_inputs}, {n_trees}, {n_outputs}"
            )
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        self.n_inputs, self.n_trees, self.n_outputs = n_inputs, n_trees, n_outputs
        self.depth = check_depth(depth)
        self.ferns = ferns
        self.reduction = reduction
        shape = (n_trees, n_decisions(self.depth, ferns))
        self.thresholds = nn.Parameter(torch.empty(shape))
        self.weights = nn.Parameter(torch.empty(n_trees, 1 << self.depth, n_outputs))
        self.register_buffer("features", torch.zeros(shape, dtype=torch.long))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Algorithm 1: random features, thresholds ``U(-3, 3)``, weights ``N(0, 0.01**2)``."""
        with torch.no_grad():
            self.features.random_(0, self.n_inputs)
            self.thresholds.uniform_(-3.0, 3.0)
            self.weights.normal_(0.0, 0.01)

    def extra_repr(self) -> str:
        return (
            f"n_inputs={self.n_inputs}, n_trees={self.n_trees}, depth={self.depth}, "
            f"n_outputs={self.n_outputs}, ferns={self.ferns}, reduction={self.reduction!r}"
        )

    def forward(self, z: Tensor) -> Tensor:
        out = hinge_forest(
            z, self.thresholds, self.weights, self.features, self.depth, self.ferns, self.reduction
        )
        return out.flatten(1) if self.reduction == "none" else out

    @torch.no_grad()
    def traverse(self, z: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Leaf, signed margin ``r*`` and arg-min decision ``v*`` per example and tree: ``(B, T)``."""
        return hinge_traverse_t(z, self.features, self.thresholds, self.depth, self.ferns)


class PooledHingeForest(nn.Module):
    """Learnable inner-product feature pool -> online standardisation -> hinge forest.

    Parameters
    ----------
    n_features
        Input width ``d``.
    n_pool
        Number of learnable inner-product features the decisions draw from.
    n_trees, depth, n_outputs, ferns, reduction
        As for :class:`HingeForest`.
    momentum
        Of the running statistics (:class:`OnlineStandardize`).

    Shape:
        input ``(B, d)``; output as for :class:`HingeForest`.
    """

    def __init__(
        self,
        n_features: int,
        n_pool: int,
        n_trees: int,
        depth: int,
        n_outputs: int = 1,
        ferns: bool = False,
        reduction: str = "sum",
        momentum: float = 0.01,
    ) -> None:
        super().__init__()
        self.pool = nn.Linear(n_features, n_pool, bias=False)
        self.standardize = OnlineStandardize(n_pool, momentum)
        self.forest = HingeForest(n_pool, n_trees, depth, n_outputs, ferns, reduction)

    def reset_parameters(self) -> None:
        self.pool.reset_parameters()
        self.standardize.reset_parameters()
        self.forest.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.forest(self.standardize(self.pool(x)))
        return out
