"""``tel_decide`` and ``hinge_decide`` under hostile arguments: they raise, never crash.

As ``test_fuzz.py`` does for ``decide``: each argument is a valid array mostly, else one
of the ways to get it wrong (dtype, shape, length, layout, read-only, Python objects,
NaN and out-of-range values, feature indices out of bounds, depths that are not
perfect trees); a call either runs with every argument valid or raises ``TypeError`` /
``ValueError`` / ``OverflowError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernel.test_fuzz import RAISED, floats, hostile, ints, module, mostly, then_hostile

B, D, K, H, T = 3, 4, 5, 2, 2
N_INT, LEAVES = (1 << H) - 1, 1 << H
#: calls that passed every check and ran
RAN = {"tel_decide": 0, "hinge_decide": 0}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.data(),
    clip=mostly([0.0, 3.0, 1e300], [-1.0, float("nan")]),
    dense=mostly([0, 1], [-1, 2, 2**31 - 1]),
    explorer=mostly([-1, 0, 1, 2, 3], [-2, 4]),
    param=mostly([0.1, 0.3, 1.0], [0.0, -1.0, float("nan"), float("inf")]),
    nodes_shape=mostly([(T, N_INT, D)], [(T, 2, D), (T, 0, D), (0, N_INT, D), (T, N_INT, D + 1)]),
)
def test_tel_decide_raises_or_decides(
    data: st.DataObject,
    clip: float,
    dense: int,
    explorer: int,
    param: float,
    nodes_shape: tuple[int, int, int],
) -> None:
    args = [
        data.draw(then_hostile(floats((B, D))), label="x"),
        data.draw(then_hostile(floats((D,))), label="mean"),
        data.draw(then_hostile(floats((D,))), label="inv_scale"),
        clip,
        data.draw(then_hostile(floats(nodes_shape)), label="nodes"),
        data.draw(then_hostile(floats((T, LEAVES, K))), label="leaves"),
        dense, data.draw(mostly([0, 1], [3])), explorer, param,
        data.draw(then_hostile(floats((B,), 0.0, 1.0)), label="uniforms"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="action"),
        data.draw(hostile(np.zeros(B)), label="propensity"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="greedy"),
        data.draw(hostile(np.zeros((B, K))), label="output"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="reached"),
    ]  # fmt: skip
    try:
        module.tel_decide(*args)
    except RAISED:
        return
    RAN["tel_decide"] += 1
    action, reached = args[11], args[15]
    assert ((action >= 0) & (action < K)).all()
    assert ((reached >= 0) & (reached <= T * LEAVES)).all()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.data(),
    ferns=st.booleans(),
    pooled=st.booleans(),
    explorer=mostly([-1, 0, 1, 2, 3], [-2, 4]),
    param=mostly([0.1, 1.0], [float("nan"), -1.0]),
)
def test_hinge_decide_raises_or_decides(
    data: st.DataObject, ferns: bool, pooled: bool, explorer: int, param: float
) -> None:
    n_inputs = 6 if pooled else D
    n_dec = data.draw(mostly([H if ferns else N_INT], [0, 2, 13]), label="decisions")
    args = [
        data.draw(then_hostile(floats((B, D))), label="x"),
        data.draw(then_hostile(floats((D,))), label="mean"),
        data.draw(then_hostile(floats((D,))), label="inv_scale"),
        data.draw(mostly([0.0, 3.0], [-2.0, float("nan")]), label="clip"),
        data.draw(then_hostile(floats((6, D))), label="pool") if pooled else None,
        data.draw(then_hostile(ints((T, n_dec), n_inputs)), label="features"),
        data.draw(then_hostile(floats((T, n_dec))), label="thresholds"),
        data.draw(then_hostile(floats((T * LEAVES, K))), label="leaf_rows"),
        data.draw(then_hostile(floats((K,))), label="bias"),
        int(ferns), data.draw(mostly([0, 1], [-1])), explorer, param,
        data.draw(then_hostile(floats((B,), 0.0, 1.0)), label="uniforms"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="action"),
        data.draw(hostile(np.zeros(B)), label="propensity"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="greedy"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="leaf"),
        data.draw(hostile(np.zeros((B, K))), label="output"),
    ]  # fmt: skip
    try:
        module.hinge_decide(*args)
    except RAISED:
        return
    RAN["hinge_decide"] += 1
    action, leaf = args[14], args[17]
    assert ((action >= 0) & (action < K)).all()
    assert (leaf == -1).all()  # a forest of T = 2 trees reports no leaf


def test_the_messages_name_the_argument_and_the_bound() -> None:
    x, mean, scale = np.zeros((B, D)), np.zeros(D), np.ones(D)
    outs = [np.zeros(B, dtype=np.int64), np.zeros(B), np.zeros(B, dtype=np.int64)]

    def tel(**change: Any) -> str:
        args = {"x": x, "mean": mean, "inv_scale": scale, "clip": 0.0,
                "nodes": np.zeros((T, N_INT, D)), "leaves": np.zeros((T, LEAVES, K)),
                "dense": 1, "sigmoid": 0, "explorer": 0, "param": 0.1,
                "uniforms": np.zeros(B)}  # fmt: skip
        args.update(change)
        try:
            module.tel_decide(*args.values(), *outs, np.zeros((B, K)), np.zeros(B, dtype=np.int64))
        except RAISED as err:
            return f"{type(err).__name__}: {err}"
        return "ok"

    def hinge(**change: Any) -> str:
        args = {"x": x, "mean": mean, "inv_scale": scale, "clip": 0.0, "pool": None,
                "features": np.zeros((T, N_INT), dtype=np.int64),
                "thresholds": np.zeros((T, N_INT)), "leaf_rows": np.zeros((T * LEAVES, K)),
                "bias": np.zeros(K), "ferns": 0, "sigmoid": 0, "explorer": 0, "param": 0.1,
                "uniforms": np.zeros(B)}  # fmt: skip
        args.update(change)
        try:
            module.hinge_decide(
                *args.values(), *outs, np.zeros(B, dtype=np.int64), np.zeros((B, K))
            )
        except RAISED as err:
            return f"{type(err).__name__}: {err}"
        return "ok"

    assert tel() == "ok" and hinge() == "ok"
    assert tel(x=x.astype(np.float32)) == "TypeError: x must hold float64, got format f"
    assert tel(x=np.full((B, D), np.inf)) == "ValueError: x[0][0] must be finite"
    assert tel(nodes=np.zeros((T, 4, D))).startswith("ValueError: nodes must be (m >= 1 trees")
    assert tel(leaves=np.zeros((T, LEAVES + 1, K))).startswith("ValueError: leaves must be (2")
    assert tel(dense=2) == "ValueError: dense and sigmoid must be 0 or 1, got 2 and 0"
    assert tel(param=2.0) == "ValueError: param out of range for explorer 0: 2.0"
    big = np.full((T, N_INT), D, dtype=np.int64)
    assert hinge(features=big) == "ValueError: features[0][0] must be in [0, 4), got 4"
    assert hinge(pool=np.zeros((6, D)), features=big) == "ok"  # six pooled features
    assert (
        hinge(pool=np.zeros((6, D + 1))) == "ValueError: pool must have length 4 on axis 1, got 5"
    )
    deep = {"features": np.zeros((T, 17), dtype=np.int64), "thresholds": np.zeros((T, 17))}
    assert hinge(ferns=1, **deep).startswith("ValueError: features must be (T >= 1, D decisions")
    assert hinge(ferns=1).startswith("ValueError: leaf_rows must be (T 2^D = 16")  # D = 3
    assert hinge(leaf_rows=np.zeros((T * LEAVES, 0))).startswith("ValueError: leaf_rows must be")
    assert hinge(uniforms=np.ones(B)) == "ValueError: uniforms[0] must be in [0, 1)"


def test_the_fuzz_ran_the_loops() -> None:
    """Some drawn calls passed every check and decided (else the fuzz tests the checks
    alone)."""
    assert RAN["tel_decide"] > 10 and RAN["hinge_decide"] > 10, RAN
