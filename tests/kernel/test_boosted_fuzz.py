"""The boosted kernel's calls (``boosted_decide``, ``boosted_value(s)``, ``boosted_route``,
``boosted_leaf_sums``) under hostile arguments: each raises or runs, never crashes.

The strategies are :mod:`tests.kernel.test_fuzz`'s; ``make sanitize`` runs this file
under AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree import kernel
from tests.kernel.pairs import pair  # noqa: F401 - skips the module without the kernel
from tests.kernel.test_fuzz import RAISED, floats, hostile, ints, mostly, then_hostile

module = kernel.native()
D, K, T, DEPTH = 3, 4, 2, 2
N_INT, LEAVES = (1 << DEPTH) - 1, 1 << DEPTH
#: calls that passed every check and ran
RAN = {
    "boosted_decide": 0,
    "boosted_value": 0,
    "boosted_values": 0,
    "boosted_route": 0,
    "boosted_leaf_sums": 0,
}


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    clip=mostly([5.0, 1e300], [0.0, -1.0, float("nan"), float("inf")]),
    errors=mostly([(0.0, 0.0), (0.2, 0.1)], [(-1.0, 0.0), (float("nan"), 1.0), (0.0, 1e309)]),
    optimism=mostly([0.0, 0.3, 50.0], [-0.1, float("nan"), float("inf")]),
    explorer=mostly([-1, 0, 1, 2, 3], [-2, 4, 2**31 - 1]),
    param=mostly([0.1, 0.3, 1.0, 50.0], [0.0, -1.0, float("nan"), float("inf")]),
    u=mostly([0.0, 0.5, 0.999], [1.0, -0.0001, float("nan")]),
    trees=st.sampled_from([0, 1, T]),
)
def test_boosted_decide_raises_or_decides(
    data: st.DataObject,
    clip: float,
    errors: tuple[float, float],
    optimism: float,
    explorer: int,
    param: float,
    u: float,
    trees: int,
) -> None:
    args = [
        data.draw(then_hostile(floats((D,))), label="x"),
        data.draw(then_hostile(ints((trees, N_INT), D + K)), label="features"),
        data.draw(then_hostile(floats((trees, N_INT))), label="thresholds"),
        data.draw(then_hostile(floats((trees, LEAVES))), label="values"),
        data.draw(then_hostile(floats((trees, LEAVES), 0.0, 1.0)), label="uncertainty"),
        data.draw(then_hostile(floats((D,))), label="offset"),
        data.draw(then_hostile(floats((D,))), label="scale"),
        data.draw(then_hostile(floats((K, D + 1))), label="base"),
        clip,
        data.draw(st.one_of(st.none(), then_hostile(floats((K,), 0.0, 1.0))), label="online"),
        *errors, optimism, explorer, param, u,
        data.draw(hostile(np.zeros(K)), label="mean"),
        data.draw(hostile(np.zeros(K)), label="scores"),
    ]  # fmt: skip
    try:
        action, propensity, greedy = module.boosted_decide(*args)
    except RAISED:
        return
    RAN["boosted_decide"] += 1
    assert 0 <= action < K and 0 <= greedy < K
    assert 0.0 <= propensity <= 1.0 + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    clip=mostly([5.0, 1e300], [0.0, -1.0, float("nan")]),
    action=mostly([0, 1, K - 1], [-1, K, 2**62]),
    trees=st.sampled_from([0, 1, T]),
)
def test_boosted_value_raises_or_values(
    data: st.DataObject, clip: float, action: int, trees: int
) -> None:
    args = [
        data.draw(then_hostile(floats((D,))), label="x"),
        data.draw(then_hostile(ints((trees, N_INT), D + K)), label="features"),
        data.draw(then_hostile(floats((trees, N_INT))), label="thresholds"),
        data.draw(then_hostile(floats((trees, LEAVES))), label="values"),
        data.draw(then_hostile(floats((D,))), label="offset"),
        data.draw(then_hostile(floats((D,))), label="scale"),
        data.draw(then_hostile(floats((K, D + 1))), label="base"),
        clip, action,
    ]  # fmt: skip
    try:
        value = module.boosted_value(*args)
    except RAISED:
        return
    RAN["boosted_value"] += 1
    assert np.isfinite(value)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    clip=mostly([5.0, 1e300], [0.0, -1.0, float("nan")]),
    trees=st.sampled_from([0, 1, T]),
    rows=st.sampled_from([0, 1, 3]),
)
def test_boosted_values_raises_or_values(
    data: st.DataObject, clip: float, trees: int, rows: int
) -> None:
    args = [
        data.draw(then_hostile(floats((rows, D))), label="x"),
        data.draw(then_hostile(ints((rows,), K)), label="actions"),
        data.draw(then_hostile(ints((trees, N_INT), D + K)), label="features"),
        data.draw(then_hostile(floats((trees, N_INT))), label="thresholds"),
        data.draw(then_hostile(floats((trees, LEAVES))), label="values"),
        data.draw(then_hostile(floats((D,))), label="offset"),
        data.draw(then_hostile(floats((D,))), label="scale"),
        data.draw(then_hostile(floats((K, D + 1))), label="base"),
        clip,
        data.draw(hostile(np.zeros(rows)), label="out"),
    ]
    try:
        module.boosted_values(*args)
    except RAISED:
        return
    RAN["boosted_values"] += 1
    assert np.isfinite(args[-1]).all()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), trees=st.sampled_from([0, 1, T]), rows=st.sampled_from([0, 1, 3]))
def test_boosted_route_raises_or_routes(data: st.DataObject, trees: int, rows: int) -> None:
    width = D + K
    args = [
        data.draw(then_hostile(floats((rows, width))), label="inputs"),
        data.draw(then_hostile(ints((trees, N_INT), width)), label="features"),
        data.draw(then_hostile(floats((trees, N_INT))), label="thresholds"),
        data.draw(hostile(np.zeros((rows, trees), dtype=np.int64)), label="leaves"),
    ]
    try:
        module.boosted_route(*args)
    except RAISED:
        return
    RAN["boosted_route"] += 1
    leaves = args[3]
    first = np.arange(trees) * LEAVES
    assert ((leaves >= first) & (leaves < first + LEAVES)).all()


@settings(max_examples=200, deadline=None)
@given(data=st.data(), trees=st.sampled_from([0, 1, T]), rows=st.sampled_from([0, 1, 3]))
def test_boosted_leaf_sums_raises_or_sums(data: st.DataObject, trees: int, rows: int) -> None:
    size = max(trees, 1) * LEAVES
    args = [
        data.draw(then_hostile(ints((rows, trees), size)), label="leaves"),
        data.draw(then_hostile(floats((rows,))), label="targets"),
        data.draw(hostile(np.full(size, np.nan)), label="count"),
        data.draw(hostile(np.full(size, np.nan)), label="squares"),
    ]
    try:
        module.boosted_leaf_sums(*args)
    except RAISED:
        return
    RAN["boosted_leaf_sums"] += 1
    assert args[2].sum() == np.asarray(args[0]).size  # each (row, tree) counted once


def test_the_fuzz_ran_the_loops() -> None:
    """The fuzz above reached the kernel's loops, not only its checks."""
    assert min(RAN.values()) > 5, RAN
