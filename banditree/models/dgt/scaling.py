"""Batch input standardisation and min-max target scaling, both foldable into a frozen tree."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.models.dgt.frozen import FrozenTree


@dataclass(frozen=True)
class FeatureStandardizer:
    """Per-feature ``(x - mean) / std`` fitted on training inputs (std 1 for constant features)."""

    mean: FloatArray
    std: FloatArray

    @classmethod
    def fit(cls, x: FloatArray) -> FeatureStandardizer:
        std = x.std(axis=0)
        return cls(mean=x.mean(axis=0), std=np.where(std > 1e-12, std, 1.0))

    def transform(self, x: FloatArray) -> FloatArray:
        out: FloatArray = (x - self.mean) / self.std
        return out

    def fold_into(self, weights: FloatArray) -> FloatArray:
        """Node weights ``(n_int, d + 1)`` on standardised inputs -> the same on raw inputs.

        ``<w, (x - m) / s> + b = <w / s, x> + (b - <w / s, m>)``.
        """
        scaled = weights[:, :-1] / self.std  # (n_int, d)
        bias = weights[:, -1] - scaled @ self.mean  # (n_int,)
        return np.concatenate((scaled, bias[:, None]), axis=1)


@dataclass(frozen=True)
class TargetMinMax:
    """Regression targets mapped to ``[0, 1]`` for training (span 1 for a constant target)."""

    low: float
    span: float

    @classmethod
    def fit(cls, y: FloatArray) -> TargetMinMax:
        low, high = float(y.min()), float(y.max())
        return cls(low=low, span=high - low if high > low else 1.0)

    def transform(self, y: FloatArray) -> FloatArray:
        out: FloatArray = (y - self.low) / self.span
        return out

    def inverse(self, y: FloatArray) -> FloatArray:
        out: FloatArray = y * self.span + self.low
        return out


def fold_scalers(
    tree: FrozenTree, inputs: FeatureStandardizer, target: TargetMinMax | None = None
) -> FrozenTree:
    """A frozen tree on raw inputs (and, for regression, in original target units)."""
    theta = tree.theta if target is None else target.inverse(tree.theta)
    return FrozenTree(weights=inputs.fold_into(tree.weights), theta=theta)
