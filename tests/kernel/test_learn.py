"""Chunks learned through the compiled kernel leave the numpy reference's state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.learners import Feedback
from banditree.learners.gradient_bandit import GradientBandit
from banditree.persistence import dumps, loads
from tests.kernel.pairs import (
    TOLERANCE,
    assert_same_columns,
    assert_same_state,
    feedbacks,
    pair,
    use_reference,
)

CONFIGS: dict[str, dict[str, Any]] = {
    # the default: identity link, ridge-fitted linear term, FastCB, the drift detector
    "default": {"n_features": 16, "n_actions": 10},
    "sigmoid": {"n_features": 5, "n_actions": 3, "reward_link": "sigmoid"},
    "adagrad-linear": {"n_features": 6, "n_actions": 4, "linear_update": "adagrad"},
    "aware-cap": {
        "n_features": 4, "n_actions": 3, "linear_term": False, "max_importance_weight": 3.0,
        "importance_aware": True, "reward_link": "sigmoid",
    },
    "no-bias": {"n_features": 4, "n_actions": 3, "shared_bias": False, "accumulate": 1},
    "two-actions": {"n_features": 3, "n_actions": 2, "height": 1},
    "1000-features": {"n_features": 1000, "n_actions": 2, "height": 3},
    "1000-actions": {"n_features": 3, "n_actions": 1000, "height": 3, "explorer": "squarecb"},
    # a window longer than the buffer (flushed every 64 entries), a decaying step, no
    # detector; no standardisation and no clip; the ridge without its mix
    "long-window-decay": {
        "n_features": 4, "n_actions": 3, "accumulate": 100, "learning_rate_decay": 50.0,
        "learning_rate_floor": 0.2, "drift_threshold": 0.0,
    },
    "raw-contexts": {"n_features": 4, "n_actions": 3, "standardize": False, "context_clip": 0.0},
    "no-mix": {"n_features": 4, "n_actions": 3, "ridge_mix_rate": 0.0},
}  # fmt: skip


def run(
    native: GradientBandit, reference: GradientBandit, chunks: int, size: int, seed: int,
    shift: bool = False,
) -> None:  # fmt: skip
    """``chunks`` ticks of ``size`` decisions, each learned by both; the same decisions,
    results and state after every chunk.  ``shift``: from the middle on, the losses move
    (a change the drift detector sees)."""
    rng = np.random.default_rng(seed)
    d = native.n_features
    for chunk in range(chunks):
        x = rng.normal(loc=0.5, scale=1.5, size=(size, d))
        ids = [f"s{seed}-{chunk}-{i}" for i in range(size)]
        columns = native.act_columns(x, ids)
        assert_same_columns(columns, reference.act_columns(x, ids))
        losses = feedbacks(native, columns, rng)
        if shift:  # action 0 pays until the middle, then every other action does
            late = chunk >= chunks // 2
            losses = [Feedback(loss=float((a == 0) == late)) for a in columns.action or []]
        results = native.learn_batch(columns.rows(), losses)
        assert [str(r) for r in results] == [
            str(r) for r in reference.learn_batch(columns.rows(), losses)
        ]
        assert_same_state(native, reference)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_chunks_learn_as_the_reference(name: str) -> None:
    native, reference = pair({**CONFIGS[name], "seed": 5})
    run(native, reference, chunks=8, size=40, seed=0)


def test_a_change_restarts_both_alike() -> None:
    """The detector's signal (ridge restart, leaf shrink, the challenger) on both."""
    native, reference = pair({**CONFIGS["default"], "seed": 2})
    run(native, reference, chunks=24, size=64, seed=1, shift=True)
    assert native._explore_origin == reference._explore_origin > 0


@pytest.mark.parametrize("size", [32, 7])
def test_checkpoints_cross_between_the_paths(size: int) -> None:
    """A checkpoint of the native learner restores into a reference one and the other
    way round, and both learn on alike (size 7: taken with a window open)."""
    native, reference = pair({**CONFIGS["default"], "seed": 3})
    run(native, reference, chunks=3, size=size, seed=2)
    from_native, from_reference = loads(dumps(native)), loads(dumps(reference))
    assert isinstance(from_native, GradientBandit) and isinstance(from_reference, GradientBandit)
    use_reference(from_native)  # the native learner's checkpoint, learned by numpy
    run(from_reference, from_native, chunks=3, size=size, seed=3)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    accumulate=st.integers(1, 9),
    height=st.integers(1, 7),
    n_actions=st.integers(2, 12),
    link=st.sampled_from(["identity", "sigmoid"]),
)
def test_any_window_learns_as_the_reference(
    seed: int, accumulate: int, height: int, n_actions: int, link: str
) -> None:
    config = {
        "n_features": 5, "n_actions": n_actions, "height": height, "accumulate": accumulate,
        "reward_link": link, "seed": seed,
    }  # fmt: skip
    native, reference = pair(config)
    run(native, reference, chunks=3, size=30, seed=seed)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(1, 8),
    d=st.integers(1, 8),
    height=st.integers(1, 6),
    k=st.integers(1, 6),
    link=st.sampled_from(["identity", "sigmoid"]),
)
def test_window_gradients_are_algorithm_2(
    seed: int, rows: int, d: int, height: int, k: int, link: str
) -> None:
    """One window straight against ``dgt_gradients_batch`` with the eq. 8 upstreams: the
    same numbers (the kernel sums in numpy's and BLAS's order: bit for bit here, a few
    ulps where a BLAS kernel adds in another order)."""
    from banditree import kernel
    from banditree.estimators import ClassificationEstimator
    from banditree.estimators.classification import gradient_value
    from banditree.models.dgt.spec import dgt_gradients_batch

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, d))
    w = rng.normal(size=((1 << height) - 1, d + 1))
    theta, bias, linear = (
        rng.normal(size=(1 << height, k)),
        rng.normal(size=k),
        rng.normal(size=(k, d)),
    )
    actions = rng.integers(0, k, size=rows)
    propensity = rng.uniform(0.05, 1.0, size=rows)
    loss = rng.integers(0, 2, size=rows).astype(float)
    est = ClassificationEstimator(link=link)

    def upstream(b: int) -> Any:
        def g(out: np.ndarray) -> np.ndarray:
            row = np.zeros(out.shape)
            row[actions[b]] = gradient_value(
                float(out[actions[b]]), propensity[b], loss[b], None, est.link, False
            )
            return row

        return g

    want = dgt_gradients_batch(
        [w], theta, x, [upstream(b) for b in range(rows)], height, bias=bias, linear=linear
    )
    got = kernel.window_gradients(
        kernel.native(), x, actions, propensity, loss, w, theta, bias, linear,
        sigmoid=link == "sigmoid", cap=None, aware=False, graded=(True, True),
    )  # fmt: skip
    assert got.keys() == want.keys()
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-13, atol=1e-15, err_msg=name)


@pytest.mark.parametrize("name", ["default", "adagrad-linear", "long-window-decay"])
@pytest.mark.parametrize("size", [1, 7, 37])
def test_chunks_that_split_windows(name: str, size: int) -> None:
    """Chunks whose end falls inside a window: the buffered entries cross into the next
    call, on both paths alike."""
    native, reference = pair({**CONFIGS[name], "seed": 4, "accumulate": 9})
    run(native, reference, chunks=12, size=size, seed=size)


def _hostile(decision: Any, feedback: Feedback, kind: int) -> tuple[Any, Any]:
    """One entry each check refuses (or accepts in another type)."""
    from dataclasses import replace

    bad: list[tuple[Any, Any]] = [
        (replace(decision, action=-1), feedback),
        (replace(decision, action=10**30), feedback),
        (replace(decision, action=None), feedback),
        (replace(decision, propensity=0.0), feedback),
        (replace(decision, propensity=float("nan")), feedback),
        (decision, Feedback(loss=2.0)),
        (decision, Feedback(loss=None)),
        (decision, Feedback(loss=True)),  # type: ignore[arg-type]
        (decision, Feedback(loss=1)),  # an int loss: learned as 1.0
        (decision, Feedback(loss=0.5, losses=(0.5, 3.0))),
        (replace(decision, context=(float("nan"),) * len(decision.context)), feedback),
        (replace(decision, action=True), feedback),
        (replace(decision, action=1.0), feedback),
        (replace(decision, action=np.int64(1)), feedback),
    ]
    return bad[kind % len(bad)]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), picks=st.lists(st.integers(0, 400), max_size=12))
def test_refused_entries_inside_a_chunk(seed: int, picks: list[int]) -> None:
    """Entries that fail a check (or take another type) anywhere in a chunk: the kernel
    stops before each, the Python path names its error, and both paths end alike."""
    native, reference = pair({**CONFIGS["default"], "n_features": 3, "seed": seed % 7})
    rng = np.random.default_rng(seed)
    for chunk in range(3):
        x = rng.normal(size=(40, 3))
        columns = native.act_columns(x, [f"h{seed}-{chunk}-{i}" for i in range(40)])
        decisions, losses = columns.rows(), feedbacks(native, columns, rng)
        for pick in picks:
            at = pick % 40
            decisions[at], losses[at] = _hostile(decisions[at], losses[at], pick // 40 + chunk)
        got = native.learn_batch(decisions, losses)
        want = reference.learn_batch(decisions, losses)
        assert [repr(r) for r in got] == [repr(r) for r in want]
        assert_same_state(native, reference)


@pytest.mark.parametrize("linear_update", ["ridge", "adagrad"])
def test_windows_that_are_not_finite_are_dropped_alike(linear_update: str) -> None:
    """Contexts of 1e300 with neither standardisation nor clip overflow the window's
    gradients or their squares: both paths drop the same windows and steps."""
    config = {**CONFIGS["raw-contexts"], "seed": 6, "linear_update": linear_update}
    native, reference = pair(config)
    rng = np.random.default_rng(6)
    for chunk in range(6):
        x = rng.normal(size=(30, 4))
        x[rng.random(30) < 0.2] *= 1e300
        columns = native.act_columns(x, [f"o{chunk}-{i}" for i in range(30)])
        losses = feedbacks(native, columns, rng)
        got = native.learn_batch(columns.rows(), losses)
        with np.errstate(over="ignore", invalid="ignore"):  # the reference's overflow
            want = reference.learn_batch(columns.rows(), losses)
        assert [repr(r) for r in got] == [repr(r) for r in want]
        assert_same_state(native, reference)
    assert native._refused + native._optimizer.refused > 0


@pytest.mark.parametrize("name", ["default", "sigmoid", "no-bias", "two-actions", "raw-contexts"])
def test_served_rewards_of_a_chunk_are_decides(name: str) -> None:
    """``learn_batch_served``: each entry's served predicted reward of its action before
    it is learned, recorded by the chunk's kernel, is ``served_rewards`` (``decide``'s
    numbers) asked just before ``learn``, bit for bit, across steps and a detected
    change (leaf values shrunk, not served until the next step); the numpy reference's
    within rounding; the same entries' changes named."""
    native, reference = pair({**CONFIGS[name], "seed": 7})
    one_by_one, _ = pair({**CONFIGS[name], "seed": 7})
    rng = np.random.default_rng(8)
    d = native.n_features
    for chunk in range(16):
        x = rng.normal(loc=0.5, scale=1.5, size=(48, d))
        columns = native.act_columns(x, [f"v{chunk}-{i}" for i in range(48)])
        late = chunk >= 8  # action 0 pays, then every other action does: a change
        losses = [Feedback(loss=float((a == 0) == late)) for a in columns.action or []]
        decisions = columns.rows()
        got, served, drifts = native.learn_batch_served(decisions, losses)
        want, reference_served, reference_drifts = reference.learn_batch_served(decisions, losses)
        assert [str(r) for r in got] == [str(r) for r in want]
        alone, changes = [], []
        for i, (decision, feedback) in enumerate(zip(decisions, losses, strict=True)):
            row, action = np.array([decision.context]), np.array([decision.action])
            alone.append(float(one_by_one.served_rewards(row, action)[0]))
            origin = one_by_one._explore_origin
            one_by_one.learn(decision, feedback)
            changes += [i] if one_by_one._explore_origin != origin else []
        assert served.tobytes() == np.array(alone).tobytes()
        np.testing.assert_allclose(served, reference_served, rtol=TOLERANCE, atol=TOLERANCE)
        assert drifts == reference_drifts == changes
    assert native._explore_origin > 0  # the change was seen
