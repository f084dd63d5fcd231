"""A tick of the TEL and hinge families by the compiled kernel is the numpy reference's.

Two levels: learners (``act_columns`` and ``act`` of a native and a reference learner of
one config, the same event ids: the same actions, greedy actions, leaves and reachable
leaves, numbers within 1e-12) and the forward passes themselves on drawn parameters and
contexts (hostile sizes and magnitudes up to 1e300), against both of the reference's
forms (``forward_batch`` and ``forward_one``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from banditree import kernel
from banditree.core.columns import DecisionColumns
from banditree.learners.gradient_bandit import GradientBandit
from banditree.models.hinge.frozen import FrozenHingeForest
from banditree.models.hinge.ops import hinge_traverse
from banditree.models.tel.frozen import FrozenTEL
from tests.kernel.pairs import TOLERANCE, assert_same_columns, feedbacks, pair

module = kernel.native()

#: (name, config): both families, both TEL arithmetics (dense up to 4,096 leaves,
#: conditional beyond), hard routing, single trees and ferns (their leaves), a pool, the
#: mean, every explorer and link, regression, and the sizes at the edges (1 and 1,000
#: features, 2 and 1,000 actions, depth 1)
CONFIGS: dict[str, dict[str, Any]] = {
    "tel-default": {"kind": "tel", "n_features": 6, "n_actions": 4},
    "tel-hard": {"kind": "tel", "n_features": 5, "n_actions": 3, "options": {"gamma": 0.05}},
    "tel-conditional": {"kind": "tel", "n_features": 4, "n_actions": 3, "n_trees": 2, "height": 12},
    "tel-sigmoid-epsilon": {
        "kind": "tel", "n_features": 5, "n_actions": 3, "reward_link": "sigmoid",
        "explorer": "epsilon_greedy", "explorer_parameter": 0.2, "n_trees": 3, "height": 3,
    },
    "tel-softmax": {
        "kind": "tel", "n_features": 4, "n_actions": 5, "explorer": "softmax",
        "explorer_parameter": 0.05, "n_trees": 2, "height": 4,
    },
    "tel-squarecb-depth-1": {
        "kind": "tel", "n_features": 3, "n_actions": 2, "explorer": "squarecb", "height": 1,
    },
    "tel-one-feature": {"kind": "tel", "n_features": 1, "n_actions": 2, "n_trees": 2, "height": 2},
    "tel-1000-features": {"kind": "tel", "n_features": 1000, "n_actions": 2, "n_trees": 2, "height": 3},
    "tel-1000-actions": {
        "kind": "tel", "n_features": 3, "n_actions": 1000, "n_trees": 2, "height": 3,
        "explorer": "squarecb",
    },
    "tel-regression": {"kind": "tel", "task": "regression", "n_features": 4, "estimator": "one_point"},
    "hinge-default": {"kind": "hinge", "n_features": 6, "n_actions": 4},
    "hinge-tree": {"kind": "hinge", "n_features": 5, "n_actions": 3, "n_trees": 1, "height": 3},
    "hinge-fern": {
        "kind": "hinge", "n_features": 5, "n_actions": 3, "n_trees": 1, "height": 4,
        "options": {"ferns": True},
    },
    "hinge-ferns-mean": {
        "kind": "hinge", "n_features": 4, "n_actions": 3, "n_trees": 5, "height": 3,
        "options": {"ferns": True, "reduction": "mean"}, "explorer": "softmax",
        "explorer_parameter": 0.1,
    },
    "hinge-pool": {
        "kind": "hinge", "n_features": 6, "n_actions": 3, "options": {"pool": 8},
        "reward_link": "sigmoid", "explorer": "epsilon_greedy", "explorer_parameter": 0.1,
    },
    "hinge-depth-1": {"kind": "hinge", "n_features": 1, "n_actions": 2, "height": 1},
    "hinge-1000-features": {"kind": "hinge", "n_features": 1000, "n_actions": 2, "n_trees": 3},
    "hinge-1000-actions": {
        "kind": "hinge", "n_features": 3, "n_actions": 1000, "explorer": "squarecb", "n_trees": 3,
    },
    "hinge-regression": {
        "kind": "hinge", "task": "regression", "n_features": 3, "estimator": "two_point",
    },
}  # fmt: skip


@cache
def trained(name: str) -> tuple[GradientBandit, GradientBandit]:
    """The pair of ``CONFIGS[name]`` after a few chunks of feedback (identical states)."""
    native, reference = pair({**CONFIGS[name], "seed": 7})
    rng = np.random.default_rng(1)
    d = native.n_features
    for chunk in range(6):
        x = rng.normal(loc=1.0, scale=2.0, size=(24, d))
        ids = [f"warm-{chunk}-{i}" for i in range(24)]
        columns = reference.act_columns(x, ids)
        losses = feedbacks(reference, columns, rng)
        for learner in (native, reference):
            learner.learn_batch(columns.rows(), losses)
    return native, reference


def assert_same_ticks(native: DecisionColumns, reference: DecisionColumns) -> None:
    """:func:`assert_same_columns`, and the same extras (TEL's reachable leaves)."""
    assert_same_columns(native, reference)
    assert native.extras == reference.extras


#: finite floats up to 1e300 and their negatives, zeros, tiny ones
FINITE = st.one_of(
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324, 1.0, -1.0]),
)


@pytest.mark.parametrize("name", list(CONFIGS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_tick_decides_as_the_reference(name: str, data: st.DataObject) -> None:
    native, reference = trained(name)
    d = native.n_features
    rows = data.draw(st.integers(0, 5), label="rows")
    cells = data.draw(st.lists(FINITE, min_size=rows * d, max_size=rows * d), label="cells")
    x = np.array(cells, dtype=np.float64).reshape(rows, d)
    ids = [data.draw(st.text(max_size=12), label="id") + f"#{i}" for i in range(rows)]
    assert_same_ticks(native.act_columns(x, ids), reference.act_columns(x, ids))
    # one context a call (``act``): the same decisions as the tick's
    one_by_one = [
        DecisionColumns.from_decisions([m.act(row, i) for row, i in zip(x, ids, strict=True)])
        for m in (native, reference)
    ]
    if rows:
        assert_same_ticks(*one_by_one)


@pytest.mark.parametrize("name", ["tel-default", "tel-conditional", "hinge-default", "hinge-tree"])
def test_typical_contexts_decide_as_the_reference(name: str) -> None:
    """Many ordinary contexts (the serving case): every decision alike, and the kernel
    really decided them (its columns, not the numpy path's)."""
    native, reference = trained(name)
    x = np.random.default_rng(3).normal(loc=1.0, scale=2.0, size=(300, native.n_features))
    ids = [f"event-{i}" for i in range(300)]
    got, want = native.act_columns(x, ids), reference.act_columns(x, ids)
    assert_same_ticks(got, want)
    assert (got.kernel_arrays is not None) == (name.startswith("hinge"))  # TEL has extras
    assert len(set(got.action or [])) > 1


def test_the_reference_switch_keeps_the_numpy_path() -> None:
    """``use_reference`` (what ``BANDITREE_KERNEL=reference`` does) never calls the kernel:
    the forward passes are the numpy forms'."""
    _, reference = trained("tel-default")
    assert not reference._native
    native, _ = trained("tel-default")
    assert native._native


# ---- the forward passes on drawn parameters ---------------------------------------


def _values(
    rng: np.random.Generator, shape: tuple[int, ...], regime: int, top: float
) -> np.ndarray:
    """Numbers of one regime: ordinary (normal), any magnitude up to ``top`` (log-uniform,
    both signs) or the special ones (zeros, the smallest subnormal, ``top``, 1)."""
    if regime == 0:
        return rng.normal(size=shape)
    if regime == 1:
        magnitude = 10.0 ** rng.uniform(-300.0, np.log10(top), size=shape)
        return magnitude * rng.choice([-1.0, 1.0], size=shape)
    special = np.array([0.0, -0.0, 5e-324, -5e-324, top, -top, 1.0, -1.0, 0.5, -0.5])
    return rng.choice(special, size=shape)


SHAPES = st.fixed_dictionaries(
    {
        "rows": st.sampled_from([1, 2, 7]),
        "features": st.sampled_from([1, 2, 5, 1000]),
        "actions": st.sampled_from([1, 2, 7, 1000]),
        "trees": st.sampled_from([1, 2, 5]),
        "depth": st.sampled_from([1, 2, 3, 5]),
        "seed": st.integers(0, 2**32 - 1),
        "regimes": st.tuples(*(st.integers(0, 2) for _ in range(4))),
    }
)


def _tel_kernel(frozen: FrozenTEL, z: np.ndarray, dense: bool) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's outputs and reached leaves of ``frozen`` on ``z`` (standardised
    already: mean 0, scale 1, no clip) in one arithmetic."""
    nodes, _ = frozen.kernel_arrays()
    leaves = frozen.leaf_weights * (0.25**frozen.depth if dense else 1.0)
    _, _, _, output, reached = kernel.tel_decide(
        module, z, np.zeros(z.shape[1]), np.ones(z.shape[1]), nodes,
        np.ascontiguousarray(leaves), np.zeros(z.shape[0]), clip=None, dense=dense,
        sigmoid=False, explorer=None, parameter=0.0,
    )  # fmt: skip
    return output, reached


def _rounds_apart(nodes: np.ndarray, z: np.ndarray) -> bool:
    """Whether a node's ``<w, z> / gamma`` (``nodes`` divided by gamma already) may round
    to another step in another order of addition: its rounding bound (``p`` ulps of
    ``sum |w_j z_j|``) is not small against the fractional region and the value is not
    clear of it by more than that bound (a cancellation of huge terms)."""
    w = nodes.reshape(-1, nodes.shape[-1])
    t, terms = z @ w.T, np.abs(z) @ np.abs(w).T
    bound = w.shape[1] * 2.0**-53 * terms
    return bool(((bound > 1e-14) & (np.abs(t) < 0.5 + 2.0 * bound)).any())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=SHAPES, gamma=st.sampled_from([1e-3, 0.05, 1.0, 10.0]))
def test_the_tel_forward_pass_is_the_reference(shape: dict[str, Any], gamma: float) -> None:
    rng = np.random.default_rng(shape["seed"])
    b, p, k, m, depth = (shape[n] for n in ("rows", "features", "actions", "trees", "depth"))
    rx, rw, ro, _ = shape["regimes"]
    # node weights within [-1, 1] (their products with contexts of 1e300 stay finite,
    # summed over 1,000 features); leaves and contexts of any magnitude up to 1e300
    nodes = np.clip(_values(rng, (m, (1 << depth) - 1, p), rw, 1.0), -1.0, 1.0)
    leaves = _values(rng, (m, 1 << depth, k), ro, 1e300)
    z = _values(rng, (b, p), rx, 1e300)
    frozen = FrozenTEL(nodes, leaves, gamma)
    if _rounds_apart(frozen.kernel_arrays()[0], z):
        event("a fractional activation by cancellation of huge terms")
        return
    # the terms' magnitudes: what a sum's rounding is relative to (cancellation)
    scale = FrozenTEL(nodes, np.abs(leaves), gamma).forward_batch_conditional(z)[0]
    slack = TOLERANCE * scale + 1e-300
    for dense in (True, False):
        output, reached = _tel_kernel(frozen, z, dense)
        assert np.isfinite(output).all()
        for want in (frozen.forward_batch_dense(z)[0], frozen.forward_batch_conditional(z)[0]):
            assert (np.abs(output - want) <= slack).all()
        one_pass = frozen.forward_one_dense if dense else frozen.forward_one_conditional
        for row in range(b):
            one, count = one_pass(z[row])
            assert (np.abs(output[row] - one) <= slack[row]).all()
            assert reached[row] == count  # the same leaves reached, in the same arithmetic


def _hinge_forest(
    rng: np.random.Generator, shape: dict[str, Any], ferns: bool, pool: int, mean: bool
) -> FrozenHingeForest:
    m, depth, k = shape["trees"], shape["depth"], shape["actions"]
    _, _, ro, rt = shape["regimes"]
    n_inputs = pool or shape["features"]
    n_dec = depth if ferns else (1 << depth) - 1
    return FrozenHingeForest(
        features=rng.integers(0, n_inputs, size=(m, n_dec)).astype(np.int64),
        thresholds=_values(rng, (m, n_dec), rt, 1e300),
        # leaf weights within 1e3: times margins of 2e300, summed over the trees, finite
        weights=np.clip(_values(rng, (m, 1 << depth, k), ro, 1e3), -1e3, 1e3),
        bias=_values(rng, (k,), ro, 1e3).clip(-1e3, 1e3),
        pool=None if not pool else rng.uniform(-1.0, 1.0, size=(pool, shape["features"])),
        depth=depth,
        ferns=ferns,
        mean=mean,
    )


def _hinge_kernel(forest: FrozenHingeForest, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    _, _, _, leaf, output = kernel.hinge_decide(
        module, x, np.zeros(x.shape[1]), np.ones(x.shape[1]), forest.kernel_forest(),
        np.zeros(x.shape[0]), clip=None, ferns=forest.ferns, sigmoid=False, explorer=None,
        parameter=0.0,
    )  # fmt: skip
    return output, leaf


def _in_order(pool: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x @ pool.T`` with each dot product added in index order (the kernel's numbers)."""
    out = np.empty((x.shape[0], pool.shape[0]))
    for i, row in enumerate(x.tolist()):
        for f, weights in enumerate(pool.tolist()):
            total = 0.0
            for a, v in zip(weights, row, strict=True):
                total += a * v
            out[i, f] = total
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=SHAPES,
    ferns=st.booleans(),
    pool=st.sampled_from([0, 0, 3]),
    mean=st.booleans(),
)
def test_the_hinge_forward_pass_is_the_reference(
    shape: dict[str, Any], ferns: bool, pool: int, mean: bool
) -> None:
    rng = np.random.default_rng(shape["seed"])
    forest = _hinge_forest(rng, shape, ferns, pool, mean)
    x = _values(rng, (shape["rows"], shape["features"]), shape["regimes"][0], 1e300)
    if pool:  # contexts and pool within [-1, 1]: the pooled features stay finite
        x = np.clip(x, -1.0, 1.0)
    output, leaf = _hinge_kernel(forest, x)
    single = forest.n_trees == 1
    assert (leaf >= 0).all() if single else (leaf == -1).all()
    # the traversal itself, bit for bit: the batch reference on the kernel's features
    z = x if forest.pool is None else _in_order(forest.pool, x)
    parts = (forest.features, forest.thresholds)
    plain = FrozenHingeForest(
        *parts, forest.weights, forest.bias, None, forest.depth, forest.ferns, forest.mean
    )
    exact, exact_leaf = plain.forward_batch_leaves(z)
    # the terms' magnitudes (the same leaves, |w| |r*|): what a sum's rounding is
    # relative to, where numpy adds in another order
    bound = FrozenHingeForest(
        *parts, np.abs(forest.weights), np.abs(forest.bias), None, forest.depth, forest.ferns,
        forest.mean,
    ).forward_batch_leaves(z)[0]  # fmt: skip
    if shape["actions"] > 1:  # one action: numpy may add the trees pairwise
        np.testing.assert_array_equal(output, exact)
    assert (np.abs(output - exact) <= TOLERANCE * bound).all()
    if single:
        assert exact_leaf is not None
        np.testing.assert_array_equal(leaf, exact_leaf)
    # the reference itself: its pooled features by BLAS, whose rounding moves a margin
    # (a margin within rounding of a tie may take the other side there)
    slack = TOLERANCE * bound
    if forest.pool is not None:
        z_blas = x @ forest.pool.T
        sides = [hinge_traverse(v, *parts, forest.depth, forest.ferns)[0] for v in (z, z_blas)]
        if not np.array_equal(*sides):
            event("a pooled margin within rounding of a tie")
            return
        slack = slack + TOLERANCE * np.abs(forest._leaf_rows).sum(axis=0) * (
            np.abs(z_blas).max() + 1.0
        )
    want, _ = forest.forward_batch_leaves(x)
    assert (np.abs(output - want) <= slack).all()
    for row in range(x.shape[0]):
        one, one_leaf = forest.forward_one(x[row])
        assert one_leaf == (int(leaf[row]) if single else None)
        assert (np.abs(output[row] - one) <= slack[row]).all()


def test_non_finite_contexts_are_refused() -> None:
    frozen = FrozenTEL(np.zeros((1, 1, 2)), np.zeros((1, 2, 3)), 1.0)
    for bad in (np.nan, np.inf, -np.inf):
        z = np.array([[0.0, bad]])
        with pytest.raises(ValueError, match=r"x\[0\]\[1\] must be finite"):
            _tel_kernel(frozen, z, True)
    forest = _hinge_forest(
        np.random.default_rng(0),
        {"trees": 2, "depth": 2, "actions": 3, "features": 2, "regimes": (0, 0, 0, 0)},
        ferns=False, pool=0, mean=False,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"x\[1\]\[0\] must be finite"):
        _hinge_kernel(forest, np.array([[0.0, 1.0], [np.nan, 0.0]]))
