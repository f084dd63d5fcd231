"""The smooth-step routing activation of the Tree Ensemble Layer (seed 003, eq. 4).

``S(t) = 0`` for ``t <= -gamma/2``, ``1`` for ``t >= gamma/2`` and the cubic
``-2/gamma**3 t**3 + 3/(2 gamma) t + 1/2`` in between: continuously differentiable,
with exact zeros and ones outside the fractional region ``(-gamma/2, gamma/2)``.
That is what lets a tree route an example to one side only (conditional computation).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from banditree.models.tel.checks import check_gamma


def smooth_step(t: Tensor, gamma: float) -> Tensor:
    """``S(t)``: probability of routing LEFT, differentiable by ordinary autograd.

    Outside the fractional region the result is exactly 0 or 1 (the cubic at the
    ends can round to ``1 - 1e-16``, which would make every node "fractional").  The
    cubic is evaluated on ``t`` clamped to ``[-gamma/2, gamma/2]`` so that its unused
    branch stays finite; its derivative vanishes at the ends, so gradients are exact.

    Shape: any; output has the shape of ``t``.
    """
    half = 0.5 * gamma
    tc = t.clamp(-half, half)
    cubic = tc * (1.5 / gamma - (2.0 / gamma**3) * tc * tc) + 0.5
    return torch.where(t >= half, 1.0, torch.where(t <= -half, 0.0, cubic))


def smooth_step_derivative(t: Tensor, gamma: float) -> Tensor:
    """``S'(t)``: ``3/(2 gamma) - 6/gamma**3 t**2`` inside the fractional region, 0 outside."""
    half = 0.5 * gamma
    inside = 1.5 / gamma - (6.0 / gamma**3) * t * t
    return torch.where(t.abs() < half, inside, 0.0)


def logistic(t: Tensor, alpha: float = 1.0) -> Tensor:
    """The soft-tree baseline activation ``1 / (1 + exp(-t / alpha))`` (paper section 4.1)."""
    return torch.sigmoid(t / alpha)


class SmoothStep(nn.Module):
    """Module form of :func:`smooth_step`.

    Parameters
    ----------
    gamma
        Width of the fractional region; smaller values route more examples hard.

    Shape:
        input any shape, output the same shape, values in ``[0, 1]``.

    Examples
    --------
    >>> t = torch.tensor([0.1], dtype=torch.float64)  # <w, x> for w = [1, 1], x = [0.1, 0]
    >>> round(SmoothStep(1.0)(t).item(), 12)  # the paper's test vector
    0.648
    """

    def __init__(self, gamma: float = 1.0) -> None:
        super().__init__()
        self.gamma = check_gamma(gamma)

    def forward(self, t: Tensor) -> Tensor:
        return smooth_step(t, self.gamma)

    def extra_repr(self) -> str:
        return f"gamma={self.gamma}"
