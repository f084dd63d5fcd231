"""Online input standardisation (Welford running mean and variance)."""

from __future__ import annotations

import numpy as np

from banditree.core.arrays import FloatArray, scalar_array
from banditree.kernel import native

#: the constants of :meth:`RunningStandardizer.scale` as 0-d arrays (numpy's faster operand)
_TINY, _ONE = scalar_array(1e-12), scalar_array(1.0)


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
        #: :meth:`update`'s count as a 0-d array (written by the learning thread alone)
        self._count = scalar_array(0.0)
        #: the compiled kernel that applies :meth:`update_each`'s rows (None: numpy;
        #: raises KernelUnavailable when asked for and missing)
        self.kernel = native()

    def update(self, x: FloatArray) -> None:
        self.count += 1
        mean = self.mean
        delta = x - mean
        # new arrays (a checkpoint may hold the old ones), each one allocation:
        # ``mean + delta / count`` and ``m2 + delta * (x - mean)``, operands swapped;
        # the count as a 0-d array (numpy's faster operand, the same division)
        count = self._count
        count[()] = self.count
        new = delta / count
        new += mean
        spread = x - new
        spread *= delta
        spread += self.m2
        self.mean, self.m2 = new, spread

    def update_each(self, x: FloatArray) -> None:
        """:meth:`update` with each row of ``x`` ``(B, n_features)`` in turn: the same
        statistics bit for bit, in one kernel call where the kernel runs."""
        if self.kernel is None or x.shape[0] <= 1:
            for row in x:
                self.update(row)
            return
        mean, m2 = np.empty(self.n_features), np.empty(self.n_features)  # new arrays, as update's
        self.kernel.welford(self.mean, self.m2, self.count, np.ascontiguousarray(x), mean, m2)
        self.count += x.shape[0]
        self.mean, self.m2 = mean, m2

    def update_rows(self, x: FloatArray) -> None:
        """:meth:`update` with every row of ``x`` ``(B, n_features)``, in one step: the
        batch's own mean and spread merged into the running ones (Chan, Golub and
        LeVeque's pairwise rule; the same statistics as row by row, other roundings).
        One row is :meth:`update` itself."""
        n = x.shape[0]
        if n <= 1:
            if n:
                self.update(x[0])
            return
        total = self.count + n
        mean = np.add.reduce(x, 0)
        mean /= n
        spread = x - mean
        spread *= spread
        m2 = np.add.reduce(spread, 0)
        delta = mean - self.mean
        # new arrays (a checkpoint may hold the old ones)
        mean = delta * (n / total)
        mean += self.mean
        m2 += self.m2
        delta *= delta
        delta *= self.count * n / total
        m2 += delta
        self.count, self.mean, self.m2 = total, mean, m2

    def scale(self) -> FloatArray:
        """Current std, with 1 where the spread is (still) zero."""
        if self.count < 2:
            return np.ones(self.n_features)
        std = np.sqrt(self.m2 / (self.count - 1))  # a reader's path: no shared buffer
        return np.where(std > _TINY, std, _ONE)

    def transform(self, x: FloatArray) -> FloatArray:
        out: FloatArray = (x - self.mean) / self.scale()
        return out
