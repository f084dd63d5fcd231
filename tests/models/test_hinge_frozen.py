"""The numpy hinge forest (FrozenHingeForest): one context and a batch equal the torch form."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.models.hinge.frozen import FrozenHingeForest
from banditree.models.hinge.function import hinge_forest, hinge_traverse_t
from banditree.models.hinge.ops import init_forest


@pytest.mark.parametrize("ferns", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize(("n_trees", "depth"), [(1, 1), (1, 6), (10, 6), (3, 9)])
def test_outputs_equal_torch(ferns: bool, reduction: str, n_trees: int, depth: int) -> None:
    rng = np.random.default_rng(depth * 10 + n_trees)
    features, thresholds, weights = init_forest(rng, n_trees, depth, 7, 4, ferns)
    weights = rng.normal(size=weights.shape)
    thresholds = rng.uniform(-1.0, 1.0, size=thresholds.shape)
    bias = rng.normal(size=4)
    frozen = FrozenHingeForest(
        features, thresholds, weights, bias, None, depth, ferns, mean=reduction == "mean"
    )
    z = rng.normal(size=(30, 7))
    zt, tt, wt, ft = (torch.from_numpy(a) for a in (z, thresholds, weights, features))
    expected = bias + hinge_forest(zt, tt, wt, ft, depth, ferns, reduction).numpy()
    np.testing.assert_allclose(frozen.forward_batch(z), expected, rtol=0, atol=1e-12)
    for row, want in zip(z, expected, strict=True):
        out, leaf = frozen.forward_one(row)
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
        assert (leaf is None) == (n_trees > 1)
        if leaf is not None:  # the leaf the traversal reached
            with torch.no_grad():
                t_leaf, _, _ = hinge_traverse_t(
                    torch.from_numpy(row[None]),
                    torch.from_numpy(features),
                    torch.from_numpy(thresholds),
                    depth,
                    ferns,
                )
            assert leaf == int(t_leaf[0, 0])


def test_pool_reads_the_inner_product_features() -> None:
    rng = np.random.default_rng(3)
    features, thresholds, weights = init_forest(rng, 5, 4, 6, 2)
    pool = rng.normal(size=(6, 3))
    frozen = FrozenHingeForest(features, thresholds, weights, np.zeros(2), pool, 4)
    plain = FrozenHingeForest(features, thresholds, weights, np.zeros(2), None, 4)
    x = rng.normal(size=(8, 3))
    np.testing.assert_allclose(frozen.forward_batch(x), plain.forward_batch(x @ pool.T))
    np.testing.assert_allclose(frozen.forward_one(x[0])[0], plain.forward_one(pool @ x[0])[0])


@pytest.mark.parametrize("ferns", [False, True])
def test_every_leaf_pass_equals_the_path_walk_with_ties(ferns: bool) -> None:
    """A forest's single context (all leaves at once) equals walking each tree's path,
    also when inputs sit exactly on thresholds (ties go LEFT, ``|r*| = 0``)."""
    rng = np.random.default_rng(11)
    features, thresholds, weights = init_forest(rng, 6, 5, 4, 3, ferns)
    weights = rng.normal(size=weights.shape)
    thresholds = np.round(rng.uniform(-1.0, 1.0, size=thresholds.shape), 1)
    bias = rng.normal(size=3)
    forest = FrozenHingeForest(features, thresholds, weights, bias, None, 5, ferns)
    one = slice(0, 1)
    trees = [
        FrozenHingeForest(
            features[t:][one], thresholds[t:][one], weights[t:][one], np.zeros(3), None, 5, ferns
        )
        for t in range(6)
    ]
    z = np.round(rng.uniform(-1.0, 1.0, size=(200, 4)), 1)  # many exact ties
    assert np.isin(z, thresholds).any()
    for row in z:
        want = bias + sum(tree.forward_one(row)[0] for tree in trees)
        out, leaf = forest.forward_one(row)
        assert leaf is None
        np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
