"""The kernel's entry points under hostile arguments: they raise, they never crash.

Each argument is drawn from valid arrays and from wrong ones (other dtypes, shapes,
lengths, layouts, read-only outputs, Python objects, NaN and out-of-range values); a
call either succeeds with every argument valid or raises ``TypeError`` /
``ValueError`` / ``OverflowError``.  ``make sanitize`` runs this file under
AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree import kernel
from tests.kernel.pairs import pair  # noqa: F401 - skips the module without the kernel

module = kernel.native()
B, D, K, H, T = 3, 4, 5, 2, 2
N_INT, LEAVES = (1 << H) - 1, 1 << H
RAISED = (TypeError, ValueError, OverflowError)
#: calls that passed every check and ran (a fuzz whose calls all fail tests the checks alone)
RAN = {"decide": 0, "window_gradients": 0}


def hostile(valid: np.ndarray, odds: int = 11) -> st.SearchStrategy[Any]:
    """``valid`` itself (mostly: wrong one time in ``odds + 1``), or one of the ways to
    get it wrong."""
    with np.errstate(all="ignore"):  # NaN to an integer: the wrong dtype is the point
        return _hostile(valid, odds)


def _hostile(valid: np.ndarray, odds: int) -> st.SearchStrategy[Any]:
    wrong = [
        valid.astype(np.float32),
        valid.astype(np.int32),
        valid.astype(np.int64) if valid.dtype == np.float64 else valid.astype(np.float64),
        valid.astype(">f8") if valid.dtype == np.float64 else valid.astype(">i8"),
        np.asfortranarray(np.stack([valid, valid], axis=-1))[..., 0],  # strided view
        valid.reshape(-1) if valid.ndim > 1 else valid.reshape(1, -1),
        valid[..., :-1] if valid.shape and valid.shape[-1] else valid,
        np.concatenate([valid, valid], axis=-1) if valid.ndim else valid,
        np.zeros((0,) * max(valid.ndim, 1), dtype=valid.dtype),
        valid.tolist(),
        None,
        7,
        b"\x00" * valid.nbytes,
        memoryview(valid.tobytes()),
        "text",
    ]
    readonly = valid.copy()
    readonly.setflags(write=False)
    wrong.append(readonly)
    # one argument in about twelve is wrong: most calls then pass the checks and run
    return st.integers(0, odds).flatmap(
        lambda i: st.sampled_from(wrong) if i == 0 else st.just(valid)
    )


def floats(
    shape: tuple[int, ...], low: float = -3.0, high: float = 3.0
) -> st.SearchStrategy[np.ndarray]:
    """Numbers in ``[low, high)`` mostly; else any float (NaN, infinities, 1e300)."""
    size = int(np.prod(shape))
    sane = st.floats(low, high, exclude_max=True)
    wild = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e300, -1e300, 5e-324])
    )
    values = st.integers(0, 11).flatmap(lambda i: wild if i == 0 else sane)
    return st.lists(values, min_size=size, max_size=size).map(
        lambda v: np.array(v, dtype=np.float64).reshape(shape)
    )


def ints(shape: tuple[int, ...], bound: int) -> st.SearchStrategy[np.ndarray]:
    """Indices in ``[0, bound)`` mostly; else any int64."""
    size = int(np.prod(shape))
    wild = st.integers(-(2**63), 2**63 - 1)
    values = st.integers(0, 11).flatmap(lambda i: wild if i == 0 else st.integers(0, bound - 1))
    return st.lists(values, min_size=size, max_size=size).map(
        lambda v: np.array(v, dtype=np.int64).reshape(shape)
    )


def mostly(good: list[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """One of ``good`` mostly, one of ``bad`` one time in twelve."""
    return st.integers(0, 11).flatmap(
        lambda i: st.sampled_from(bad) if i == 0 else st.sampled_from(good)
    )


def then_hostile(strategy: st.SearchStrategy[np.ndarray]) -> st.SearchStrategy[Any]:
    return strategy.flatmap(hostile)


@settings(max_examples=200, deadline=None, derandomize=True)  # a fixed run: see below
@given(
    data=st.data(),
    clip=mostly([0.0, 3.0, 1e300], [-1.0, float("nan"), float("inf")]),
    aggregate=mostly([0, 1, 2], [-1, 3, 2**40]),
    sigmoid=mostly([0, 1], [-5, 2**31 - 1]),
    explorer=mostly([-1, 0, 1, 2, 3], [-2, 4]),
    param=mostly([0.1, 0.3, 1.0, 50.0], [0.0, -1.0, float("nan"), float("inf"), 1e300]),
)
def test_decide_raises_or_decides(
    data: st.DataObject, clip: float, aggregate: int, sigmoid: int, explorer: int, param: float
) -> None:
    trees = 1 if aggregate == 0 else data.draw(st.sampled_from([1, T]))
    args = [
        data.draw(then_hostile(floats((B, D))), label="x"),
        data.draw(then_hostile(floats((D,))), label="mean"),
        data.draw(then_hostile(floats((D,))), label="inv_scale"),
        clip,
        data.draw(then_hostile(floats((trees, N_INT, D + 1))), label="weights"),
        data.draw(then_hostile(floats((trees, LEAVES, K))), label="theta"),
        data.draw(st.one_of(st.none(), then_hostile(floats((trees, K, D)))), label="linear"),
        aggregate, sigmoid, explorer, param,
        data.draw(then_hostile(floats((B,), 0.0, 1.0)), label="uniforms"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="action"),
        data.draw(hostile(np.zeros(B)), label="propensity"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="greedy"),
        data.draw(hostile(np.zeros(B, dtype=np.int64)), label="leaf"),
        data.draw(hostile(np.zeros((B, K))), label="output"),
        data.draw(hostile(np.zeros((B, K))), label="scores"),
    ]  # fmt: skip
    try:
        module.decide(*args)
    except RAISED:
        return
    RAN["decide"] += 1
    action, propensity = args[12], args[13]
    assert ((action >= 0) & (action < K)).all()
    assert (propensity[np.isfinite(propensity)] <= 1.0 + 1e-9).all()


@settings(max_examples=200, deadline=None, derandomize=True)  # a fixed run: see below
@given(
    data=st.data(),
    sigmoid=mostly([0, 1], [7]),
    cap=mostly([0.0, 3.0, -1.0], [float("nan"), float("inf")]),
    aware=mostly([0, 1], [-3]),
)
def test_window_gradients_raise_or_add(
    data: st.DataObject, sigmoid: int, cap: float, aware: int
) -> None:
    args = [
        data.draw(then_hostile(floats((B, D))), label="x"),
        data.draw(then_hostile(ints((B,), K)), label="actions"),
        data.draw(then_hostile(floats((B,), 0.01, 1.0)), label="propensity"),
        data.draw(then_hostile(floats((B,), 0.0, 1.0)), label="loss"),
        data.draw(then_hostile(floats((N_INT, D + 1))), label="weights"),
        data.draw(then_hostile(floats((LEAVES, K))), label="theta"),
        data.draw(st.one_of(st.none(), then_hostile(floats((K,)))), label="bias"),
        data.draw(st.one_of(st.none(), then_hostile(floats((K, D)))), label="linear"),
        sigmoid, cap, aware,
        data.draw(hostile(np.zeros((N_INT, D + 1))), label="grad_weights"),
        data.draw(hostile(np.zeros((LEAVES, K))), label="grad_theta"),
        data.draw(st.one_of(st.none(), hostile(np.zeros(K))), label="grad_bias"),
        data.draw(st.one_of(st.none(), hostile(np.zeros((K, D)))), label="grad_linear"),
    ]  # fmt: skip
    try:
        module.window_gradients(*args)
    except RAISED:
        return
    RAN["window_gradients"] += 1
    assert isinstance(args[11], np.ndarray)


def test_the_messages_name_the_argument_and_the_bound() -> None:
    x, mean, scale = np.zeros((B, D)), np.zeros(D), np.ones(D)
    weights, theta = np.zeros((1, N_INT, D + 1)), np.zeros((1, LEAVES, K))
    outs = [np.zeros(B, dtype=np.int64), np.zeros(B), np.zeros(B, dtype=np.int64),
            np.zeros(B, dtype=np.int64), np.zeros((B, K)), np.zeros((B, K))]  # fmt: skip

    def decide(**change: Any) -> str:
        args = {"x": x, "mean": mean, "inv_scale": scale, "clip": 0.0, "weights": weights,
                "theta": theta, "linear": None, "aggregate": 0, "sigmoid": 0, "explorer": 0,
                "param": 0.1, "uniforms": np.zeros(B)}  # fmt: skip
        args.update(change)
        try:
            module.decide(*args.values(), *outs)
        except RAISED as err:
            return f"{type(err).__name__}: {err}"
        return "ok"

    assert decide() == "ok"
    assert decide(x=x.astype(np.float32)) == "TypeError: x must hold float64, got format f"
    assert decide(mean=np.zeros(D + 1)) == "ValueError: mean must have length 4 on axis 0, got 5"
    assert decide(x=np.zeros((D, B)).T) == "ValueError: x must be C-contiguous"
    assert decide(x=np.full((B, D), np.nan)) == "ValueError: x[0][0] must be finite"
    assert decide(uniforms=np.ones(B)) == "ValueError: uniforms[0] must be in [0, 1)"
    assert decide(weights=np.zeros((1, 4, D + 1))).startswith("ValueError: weights must be (T >= 1")
    assert decide(param=2.0) == "ValueError: param out of range for explorer 0: 2.0"
    assert decide(linear=[[0.0]]).startswith("TypeError: linear must be a numpy array")


def test_the_fuzz_ran_the_loops() -> None:
    """The two fuzz tests above reached the kernels' loops, not only their checks.

    Most of their calls fail a check (a hostile argument or a wild value in one of about
    fifteen), so a random run reached ``window_gradients``' loop only five times in
    200 now and then; the two run a fixed (derandomized) set of examples instead."""
    assert RAN["decide"] > 5 and RAN["window_gradients"] > 5, RAN


@settings(max_examples=150, deadline=None)
@given(data=st.data(), mixing=mostly([0, 1], [-1, 2**31 - 1]))
def test_ridge_rows_raise_or_update(data: st.DataObject, mixing: int) -> None:
    dim = D + 1
    inv_gram = np.stack([np.eye(dim)] * K)
    args = [
        data.draw(then_hostile(floats((B, D))), label="x"),
        data.draw(then_hostile(ints((B,), K)), label="actions"),
        data.draw(then_hostile(floats((B,), 0.0, 1.0)), label="rewards"),
        data.draw(hostile(inv_gram), label="inv_gram"),
        data.draw(hostile(np.zeros((K, dim))), label="weights"),
        data.draw(hostile(np.zeros((K, 3))), label="mix_stats"),
        data.draw(then_hostile(floats((K,), 0.0, 1.0)), label="prior"),
        mixing,
    ]
    try:
        applied = module.ridge_rows(*args)
    except RAISED:
        return
    assert 0 <= applied <= B


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    alpha=mostly([0.99, 0.0], [float("nan"), -1.0]),
    rate=mostly([1e-3, 0.1], [float("inf")]),
    flags=st.tuples(st.integers(0, 1), st.integers(0, 1)),
)
def test_rmsprop_raises_or_steps(
    data: st.DataObject, alpha: float, rate: float, flags: tuple[int, int]
) -> None:
    n = 7
    args = [
        data.draw(then_hostile(floats((n,))), label="param"),
        data.draw(then_hostile(floats((n,))), label="grad"),
        data.draw(hostile(np.ones(n)), label="square_avg"),
        data.draw(hostile(np.zeros(n)), label="new"),
        alpha, 1e-8, rate, *flags,
    ]  # fmt: skip
    try:
        stepped = module.rmsprop(*args)
    except RAISED:
        return
    assert stepped in (True, False)


@settings(max_examples=100, deadline=None)
@given(
    prefix=st.one_of(st.binary(max_size=200), st.just("text"), st.none()),
    ids=st.one_of(
        st.lists(st.one_of(st.text(max_size=300), st.just("\ud800"), st.integers(), st.none())),
        st.integers(),
        st.none(),
    ),
    rows=st.integers(0, 4),
    data=st.data(),
)
def test_event_uniforms_raise_or_hash(
    prefix: Any, ids: Any, rows: int, data: st.DataObject
) -> None:
    out = data.draw(hostile(np.zeros((rows, 2))), label="out")
    try:
        module.event_uniforms(prefix, ids, out)
    except (*RAISED, UnicodeError):
        return
    assert ((out >= 0.0) & (out < 1.0)).all()


@settings(max_examples=150, deadline=None)
@given(data=st.data(), count=mostly([0, 1, 5, 2**40], [-1, 2**63]))
def test_welford_raises_or_folds(data: st.DataObject, count: int) -> None:
    args = [
        data.draw(then_hostile(floats((D,))), label="mean"),
        data.draw(then_hostile(floats((D,))), label="m2"),
        count,
        data.draw(then_hostile(floats((B, D))), label="rows"),
        data.draw(hostile(np.zeros(D)), label="mean_out"),
        data.draw(hostile(np.zeros(D)), label="m2_out"),
    ]
    try:
        module.welford(*args)
    except RAISED:
        return
    assert isinstance(args[4], np.ndarray)


#: learn_chunk's settings (``_chunk.h``'s C_ order), valid
CHUNK_CONFIG = [
    3, 2, 4, 0.01, 10.0, 0.1, 0.99, 1e-8, 1.0, 1.0, 3.0, 2.0, 0, 0, 1, 1, 3.0, 0, 0.0, 0,
    10.0, 0.0, 1.0, 1, 0.5, 0.05, 2, 0.3, 0.25, 1,
]  # fmt: skip


def _config(data: st.DataObject) -> Any:
    config = np.array(CHUNK_CONFIG, dtype=np.float64)
    at = data.draw(st.integers(0, 4 * len(config)), label="config at")
    if at < len(config):  # one setting wrong, one time in four
        config[at] = data.draw(
            st.sampled_from([np.nan, -1.0, np.inf, 0.5, 2.0, 1e300]), label="setting"
        )
    return data.draw(hostile(config), label="config")


def rare_hostile(valid: np.ndarray) -> st.SearchStrategy[Any]:
    """:func:`hostile` one time in 40: learn_chunk takes some 30 arrays, and most of
    its calls must still pass every check and run."""
    return hostile(valid, odds=39)


def rare(strategy: st.SearchStrategy[np.ndarray]) -> st.SearchStrategy[Any]:
    return strategy.flatmap(rare_hostile)


@settings(max_examples=400, deadline=None)
@given(
    data=st.data(),
    ridge=st.booleans(),
    at=mostly([0, 1, B], [-1, B + 1, 2**62]),
    nb=st.sampled_from([0, 0, 2]),
)
def test_learn_chunk_raises_or_learns(data: st.DataObject, ridge: bool, at: int, nb: int) -> None:
    dim = D + 1
    shapes = [(N_INT, D + 1), (LEAVES, K), (K,), (K, D)]
    params = tuple(data.draw(rare(floats(s)), label=f"params{i}") for i, s in enumerate(shapes))
    graded = [True, True, not ridge, not ridge]
    squares = tuple(
        data.draw(rare_hostile(np.zeros(s)), label=f"square{i}") if on else None
        for i, (s, on) in enumerate(zip(shapes, graded, strict=True))
    )
    grads = tuple(
        data.draw(rare_hostile(np.zeros(s)), label=f"grad{i}") if on else None
        for i, (s, on) in enumerate(zip(shapes, graded, strict=True))
    )
    buffered = (
        data.draw(rare(floats((nb, D))), label="bx"),
        data.draw(rare(ints((nb,), K)), label="bactions"),
        data.draw(rare(floats((nb,), 0.01, 1.0)), label="bprop"),
        data.draw(rare(floats((nb,), 0.0, 1.0)), label="bloss"),
    )
    ridge_arrays = (
        data.draw(rare_hostile(np.stack([np.eye(dim)] * K)), label="inv_gram"),
        data.draw(rare_hostile(np.zeros((K, dim))), label="weights"),
        data.draw(rare_hostile(np.zeros((K, 3))), label="mix_stats"),
        data.draw(rare(floats((K,), 0.0, 1.0)), label="prior"),
    ) if ridge else None  # fmt: skip
    leaves = data.draw(
        mostly(
            [(np.zeros(LEAVES), np.zeros(LEAVES), np.zeros(LEAVES), np.zeros((LEAVES, K))), None],
            [(np.zeros(LEAVES),) * 4, (np.zeros(LEAVES),) * 3, ()],
        ),
        label="leaves",
    )
    istate = np.array([5, nb + 1, 1, 1, 0, 0, 0, 5, 0, 0, 0, 0], dtype=np.int64)
    istate = data.draw(
        mostly([istate], [istate * -1, istate[:-1], istate.astype(np.float64), istate * 2**60]),
        label="istate",
    )
    args = [
        data.draw(rare(floats((B, D))), label="x"),
        data.draw(rare(ints((B,), K)), label="actions"),
        data.draw(rare(floats((B,), 0.01, 1.0)), label="propensity"),
        data.draw(rare(floats((B,), 0.0, 1.0)), label="loss"),
        at,
        data.draw(mostly([buffered], [buffered[:3], list(buffered), None]), label="buffered"),
        data.draw(rare_hostile(np.zeros(B, dtype=np.int64)), label="learned"),
        data.draw(mostly([params], [params[:2], (*params[:2], None, params[3])]), label="params"),
        squares,
        data.draw(mostly([grads], [(None, *grads[1:]), grads[:3]]), label="grads"),
        ridge_arrays,
        (
            data.draw(rare_hostile(np.zeros(D)), label="mean"),
            data.draw(rare_hostile(np.zeros(D)), label="m2"),
        ),
        (data.draw(rare_hostile(np.zeros(D)), label="snap_mean"), np.ones(D)),
        leaves,
        istate,
        data.draw(rare_hostile(np.zeros(7)), label="fstate"),
        _config(data),
    ]
    served = (  # the served tree's predicted rewards, asked for or not
        data.draw(rare_hostile(np.full(B, np.nan)), label="served"),
        data.draw(rare(floats((N_INT, D + 1))), label="served weights"),
        data.draw(rare(floats((LEAVES, K))), label="served theta"),
        data.draw(st.one_of(st.none(), rare(floats((K, D)))), label="served linear"),
    )
    served_arg = data.draw(mostly([None, served], [served[:3], [*served], 0]), label="served")
    if served_arg is not None:
        args.append(served_arg)
    try:
        module.learn_chunk(*args)
    except RAISED:
        return
    RAN["learn_chunk"] = RAN.get("learn_chunk", 0) + 1
    state = args[14]
    stop, tail = int(state[10]), int(state[11])
    assert at <= stop <= B and 0 <= tail <= nb + stop - at
    assert set(args[6][at:stop].tolist()) <= {0, 1}
    if served_arg is not None:  # written for the entries learned alone
        out = served_arg[0]
        assert np.isnan(out[:at]).all() and np.isnan(out[stop:]).all()


def test_the_chunk_fuzz_ran_the_loop() -> None:
    """The fuzz above reached learn_chunk's loop, not only its checks."""
    assert RAN.get("learn_chunk", 0) > 20, RAN
