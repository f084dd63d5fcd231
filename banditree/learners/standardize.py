"""Online input standardisation (Welford running mean and variance)."""

from __future__ import annotations

import numpy as np

from banditree.core.arrays import FloatArray


class RunningStandardizer:
    """Running per-feature mean and variance; ``transform`` gives ``(x - mean) / std``.

    No batch statistics exist online, so the statistics are those of every context
    learned from so far.  Features with no spread yet are passed through centred
    (their std is taken as 1).
    """

    def __init__(self, n_features: int) -> None:
        self.n_features = n_features
        self.count = 0
        self.mean = np.zeros(n_features)
        self.m2 = np.zeros(n_features)

    def update(self, x: FloatArray) -> None:
        self.count += 1
        mean = self.mean
        delta = x - mean
        # new arrays (a checkpoint may hold the old ones), each one allocation:
        # ``mean + delta / count`` and ``m2 + delta * (x - mean)``, operands swapped
        new = delta / self.count
        new += mean
        spread = x - new
        spread *= delta
        spread += self.m2
        self.mean, self.m2 = new, spread

    def scale(self) -> FloatArray:
        """Current std, with 1 where the spread is (still) zero."""
        if self.count < 2:
            return np.ones(self.n_features)
        std = np.sqrt(self.m2 / (self.count - 1))
        return np.where(std > 1e-12, std, 1.0)

    def transform(self, x: FloatArray) -> FloatArray:
        out: FloatArray = (x - self.mean) / self.scale()
        return out
