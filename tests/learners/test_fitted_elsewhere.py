"""Parameters the ridge fits get no gradient from the DGT: the same step, less work."""

from __future__ import annotations

import numpy as np

from banditree.learners import build_learner
from banditree.learners.gradient_bandit.learn import RIDGE_FITTED
from banditree.models.dgt.spec import DGTSpec


def test_dgt_leaves_out_the_gradients_fitted_elsewhere() -> None:
    rng = np.random.default_rng(0)
    full = DGTSpec(6, 4, height=3, linear=True)
    params = full.init_params(rng)
    params["linear"] = rng.normal(size=params["linear"].shape)
    x = rng.normal(size=(5, 6))
    upstreams = [lambda out, row=row: row for row in rng.normal(size=(5, 4))]
    lean = DGTSpec(6, 4, height=3, linear=True)
    lean.fitted_elsewhere = RIDGE_FITTED
    every = full.gradients_batch(params, x, upstreams, rng)
    some = lean.gradients_batch(params, x, upstreams, rng)
    assert set(every) == {"W0", "theta", "bias", "linear"}
    assert set(some) == {"W0", "theta"}
    for name, value in some.items():  # the node and leaf gradients bit for bit
        assert np.array_equal(value, every[name])


def test_a_ridge_learner_marks_its_own_copy_of_the_spec() -> None:
    config = {"kind": "dgt", "height": 3, "n_features": 4, "n_actions": 3, "seed": 0}
    learner = build_learner(config)
    assert learner._ridge is not None  # the default DGT fits bias and linear by ridge
    assert learner.model.fitted_elsewhere == RIDGE_FITTED
    plain = build_learner({**config, "linear_update": "adagrad"})
    assert plain._ridge is None and plain.model.fitted_elsewhere == frozenset()
