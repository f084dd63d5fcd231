"""A frozen forest's one-context pass: every node in one product, the trees' own leaves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.models.dgt.forest_spec import DGTForestSpec


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_trees=st.integers(1, 5),
    height=st.integers(1, 7),
    n_outputs=st.integers(1, 4),
    linear=st.booleans(),
)
def test_outputs_one_equals_each_trees_own_pass(
    seed: int, n_trees: int, height: int, n_outputs: int, linear: bool
) -> None:
    rng = np.random.default_rng(seed)
    n_features = 5
    spec = DGTForestSpec(n_features, n_outputs, height, n_trees=n_trees, linear=linear)
    params = spec.init_params(rng)
    for name in params:  # leaves, bias and linear terms that differ by tree
        params[name] = params[name] + rng.normal(size=params[name].shape)
    frozen = spec.freeze(params)
    assert len(frozen) == n_trees and len(list(frozen)) == n_trees
    for x in rng.normal(size=(20, n_features)) * 3.0:
        expected = np.stack([tree.predict_one(x)[1] for tree in frozen])
        np.testing.assert_allclose(frozen.outputs_one(x), expected, rtol=1e-12, atol=1e-12)
        # and the batch pass agrees with the single one
        batch = np.stack([tree.predict(x[None, :])[0] for tree in frozen])
        np.testing.assert_allclose(batch, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("aggregate", ["vote", "average"])
def test_forward_is_the_mean_of_the_trees(aggregate: str) -> None:
    rng = np.random.default_rng(4)
    spec = DGTForestSpec(3, 2, 3, n_trees=3, aggregate=aggregate)
    params = {k: v + rng.normal(size=v.shape) for k, v in spec.init_params(rng).items()}
    frozen = spec.freeze(params)
    x = rng.normal(size=3)
    out = spec.forward(frozen, x)
    np.testing.assert_allclose(
        out.output, np.mean([t.predict_one(x)[1] for t in frozen], axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        spec.forward_batch(frozen, x[None, :])[0],
        out.scores if out.scores is not None else out.output,
        rtol=1e-12,
    )
