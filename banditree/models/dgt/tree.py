"""The Dense Gradient Tree (DGT): a hard oblique tree trained by gradient (seed 002, section 3)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.tree_function import hard_tree, reached_leaves_t
from banditree.models.dgt.tree_ops import check_height, effective_weights_np

#: Hidden widths of the linear overparameterization for L = 3 (paper Table 12): (d1, d2).
TABLE12_HIDDEN: dict[int, tuple[int, int]] = {
    2: (240, 240),
    4: (600, 600),
    6: (1008, 1008),
    8: (1530, 1530),
    10: (2046, 2046),
}


def table12_hidden(height: int) -> tuple[int, int]:
    """Hidden widths for ``L = 3`` from the paper's Table 12."""
    if height not in TABLE12_HIDDEN:
        raise ValueError(
            f"Table 12 gives hidden widths for heights {sorted(TABLE12_HIDDEN)}, not {height}; "
            "pass explicit hidden widths instead"
        )
    return TABLE12_HIDDEN[height]


class DGTree(nn.Module):
    """Complete oblique tree of height ``h`` with sum-form paths and sign quantisation.

    The forward pass is the hard tree: ``h`` signs route the example to one leaf and
    the output is that leaf's row of ``theta``.  The backward pass is Algorithm 2:
    ``theta`` gets the gradient of the hard choice, the node weights get the
    gradient of the softmax surrogate with the straight-through estimator.

    Parameters
    ----------
    n_features
        Input width ``d`` (a bias input of 1 is appended internally).
    n_outputs
        ``K`` (number of actions or classes), 1 for regression.
    height
        Tree height ``h`` in ``[1, 12]``: ``2**h - 1`` internal nodes, ``2**h`` leaves.
    hidden
        Widths of the linear overparameterization (``L = len(hidden) + 1`` layers);
        empty for a plain tree. ``"table12"`` picks the paper's widths for ``L = 3``.

    Shape:
        input ``(B, d)``, output ``(B, K)``.
    """

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        height: int,
        hidden: Sequence[int] | str = (),
    ) -> None:
        super().__init__()
        if n_features < 1 or n_outputs < 1:
            raise ValueError(
                f"n_features and n_outputs must be >= 1, got {n_features}, {n_outputs}"
            )
        self.n_features = n_features
        self.n_outputs = n_outputs
        self.height = check_height(height)
        widths = (
            table12_hidden(self.height) if hidden == "table12" else tuple(int(w) for w in hidden)
        )
        self.hidden = widths
        dims = [n_features + 1, *widths, self.n_internal]
        self.layers = nn.ParameterList(
            [nn.Parameter(torch.empty(dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
        )
        self.theta = nn.Parameter(torch.empty(self.n_leaves, n_outputs))
        self.reset_parameters()

    @property
    def n_internal(self) -> int:
        return (1 << self.height) - 1

    @property
    def n_leaves(self) -> int:
        return 1 << self.height

    def reset_parameters(self) -> None:
        for w in self.layers:
            bound = 1.0 / math.sqrt(w.shape[1])
            nn.init.uniform_(w, -bound, bound)
        bound = 1.0 / math.sqrt(self.n_leaves)
        nn.init.uniform_(self.theta, -bound, bound)

    def extra_repr(self) -> str:
        return (
            f"n_features={self.n_features}, n_outputs={self.n_outputs}, "
            f"height={self.height}, hidden={list(self.hidden)}"
        )

    @staticmethod
    def augment(x: Tensor) -> Tensor:
        """Append the bias input: ``(B, d)`` -> ``(B, d + 1)``."""
        return torch.cat((x, x.new_ones(x.shape[0], 1)), dim=1)

    def activations(self, x: Tensor) -> Tensor:
        """Node activations ``a = W^(L) ... W^(1) [x; 1]``, layer by layer: ``(B, 2**h - 1)``."""
        z = self.augment(x)
        for w in self.layers:
            z = z @ w.T
        return z

    def forward(self, x: Tensor) -> Tensor:
        return hard_tree(self.activations(x), self.theta, self.height)

    @torch.no_grad()
    def leaves(self, x: Tensor) -> Tensor:
        """Leaf index reached by each example (layered form): ``(B,)``."""
        return reached_leaves_t(self.activations(x), self.height)

    @torch.no_grad()
    def freeze(self) -> FrozenTree:
        """The inference form: one effective float64 weight matrix, numpy only."""
        layers = [w.detach().double().cpu().numpy() for w in self.layers]
        return FrozenTree(
            weights=np.array(effective_weights_np(layers)),  # a copy: never a view of the live W
            theta=self.theta.detach().double().cpu().numpy().copy(),
        )

    @classmethod
    def from_frozen(cls, frozen: FrozenTree) -> DGTree:
        """A plain (``L = 1``) tree holding a frozen tree's parameters."""
        tree = cls(frozen.n_features, frozen.n_outputs, frozen.height)
        with torch.no_grad():
            tree.layers[0].copy_(torch.from_numpy(frozen.weights))
            tree.theta.copy_(torch.from_numpy(frozen.theta))
        return tree
