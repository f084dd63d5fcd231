"""The running statistics' cheaper updates give the textbook expressions' very bits.

Replays of a log must equal an earlier run of the same version bit for bit, so these
updates are written to spend less without changing a single rounding.
"""

from __future__ import annotations

import numpy as np

from banditree.learners.ridge import PerActionRidge
from banditree.learners.standardize import RunningStandardizer


def test_standardizer_is_welford_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    rows = rng.normal(loc=3.0, scale=[1e-3, 1.0, 1e3, 1e6], size=(500, 4))
    std = RunningStandardizer(4)
    count, mean, m2 = 0, np.zeros(4), np.zeros(4)
    for x in rows:
        std.update(x)
        count += 1
        delta = x - mean
        mean = mean + delta / count
        m2 = m2 + delta * (x - mean)
        assert std.mean.tobytes() == mean.tobytes() and std.m2.tobytes() == m2.tobytes()


def test_ridge_rows_are_sherman_morrison_bit_for_bit() -> None:
    rng = np.random.default_rng(2)
    k, d = 3, 5
    ridge = PerActionRidge(k, d, l2=0.7, prior=0.2)
    # the numpy specification (the kernel's rounds sum in another order: tests/kernel
    # compares them with these within 1e-12)
    ridge.kernel = None
    inv = np.stack([np.diag(np.full(d + 1, 1.0 / 0.7))] * k)
    w = np.zeros((k, d + 1))
    w[:, -1] = 0.2
    x = rng.normal(size=(300, d))
    actions = [int(a) for a in rng.integers(k, size=300)]
    rewards = [float(r) for r in rng.uniform(size=300)]
    assert ridge.update_rows(x, actions, rewards) == 300
    for row, a, r in zip(x, actions, rewards, strict=True):
        u = np.append(row, 1.0)
        iu = inv[a] @ u
        gain = iu / (1.0 + float(u @ iu))
        w[a] += gain * (r - float(w[a] @ u))
        inv[a] -= np.outer(gain, iu)
    assert ridge.inv_gram.tobytes() == inv.tobytes() and ridge.weights.tobytes() == w.tobytes()


def test_standardizer_rows_merge_to_the_row_by_row_statistics() -> None:
    """``update_rows`` (a batch's mean and spread merged in) keeps the statistics of
    ``update`` row by row; a single row is ``update`` bit for bit."""
    rng = np.random.default_rng(3)
    rows, merged = RunningStandardizer(4), RunningStandardizer(4)
    for n in [1, 0, 5, 1, 12, 2, 7, 1, 30]:
        x = rng.normal(loc=3.0, scale=[1e-3, 1.0, 1e3, 1e6], size=(n, 4))
        for row in x:
            rows.update(row)
        merged.update_rows(x)
        assert merged.count == rows.count
        np.testing.assert_allclose(merged.mean, rows.mean, rtol=1e-12)
        np.testing.assert_allclose(merged.m2, rows.m2, rtol=1e-12)
    one, single = RunningStandardizer(2), RunningStandardizer(2)
    for row in rng.normal(size=(5, 2)):
        one.update(row)
        single.update_rows(row[None, :])
    assert one.mean.tobytes() == single.mean.tobytes() and one.m2.tobytes() == single.m2.tobytes()
