"""Two learners of one config, the compiled kernel's and the numpy reference's, and the
comparisons the kernel's tests make between them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from banditree import kernel
from banditree.core.columns import DecisionColumns
from banditree.learners import Feedback, Learner, build_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.gradient_bandit.kernel_calls import use_reference

#: learned state (parameters, optimiser, ridge, statistics) may differ by summation order
TOLERANCE = 1e-12

if kernel.ACTIVE != "native":  # the kernel's own tests need it (BANDITREE_KERNEL=reference)
    pytest.skip(f"the native kernel is not active ({kernel.ACTIVE})", allow_module_level=True)


def pair(config: dict[str, Any]) -> tuple[GradientBandit, GradientBandit]:
    """``(native, reference)`` learners of ``config``: the same seed, the same state (a
    gradient-learned kind: ``dgt`` where the config names none; the boosted kind's
    kernel: ``test_boosted.py``)."""
    config = {"kind": "dgt", **config}
    native, reference = build_learner(config), build_learner(config)
    assert isinstance(native, GradientBandit) and isinstance(reference, GradientBandit)
    assert native._native
    use_reference(reference)
    return native, reference


def feedbacks(
    learner: Learner, columns: DecisionColumns, rng: np.random.Generator
) -> list[Feedback]:
    """A loss in [0, 1] for every classification decision; a loss for every regression one."""
    if learner.task == "classification":
        return [Feedback(loss=float(rng.random() < 0.5)) for _ in columns.event_ids]
    assert columns.value is not None
    if columns.probes is not None:
        return [Feedback(losses=(abs(a), abs(b))) for a, b in columns.probes]
    return [Feedback(loss=float(abs(v - 1.0))) for v in columns.value]


def assert_same_columns(native: DecisionColumns, reference: DecisionColumns) -> None:
    """The same decisions: actions, leaves, greedy actions equal; numbers within 1e-12."""
    assert native.event_ids == reference.event_ids
    assert native.model_version == reference.model_version
    assert native.action == reference.action
    assert native.greedy_action == reference.greedy_action
    assert native.leaf == reference.leaf
    assert native.explored == reference.explored
    assert native.perturbation == reference.perturbation
    for name in ("propensity", "value", "greedy_value"):
        got, want = getattr(native, name), getattr(reference, name)
        assert (got is None) == (want is None), name
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)
    assert native.contexts == reference.contexts


def assert_same_state(native: GradientBandit, reference: GradientBandit) -> None:
    """The same learned state within 1e-12: parameters, RMSprop's averages, the ridge,
    the input statistics and the snapshot's, the open window, the leaf counts, the
    drift detector and the counters."""
    assert native._n_learned == reference._n_learned
    assert native.version == reference.version
    assert native._refused == reference._refused
    assert native._optimizer.refused == reference._optimizer.refused
    assert native._optimizer.lr == reference._optimizer.lr
    assert native._loss_sum == pytest.approx(reference._loss_sum, rel=TOLERANCE)
    assert native._pending == reference._pending
    assert native._accum_finite == reference._accum_finite
    assert len(native._buffer) == len(reference._buffer)
    for (x, d, f), (x2, d2, f2) in zip(native._buffer, reference._buffer, strict=True):
        assert d == d2 and f == f2
        np.testing.assert_array_equal(x, x2)
    assert native._accum.keys() == reference._accum.keys()
    for name, value in reference._accum.items():
        np.testing.assert_allclose(
            native._accum[name], value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name
        )
    for name in ("mean", "inv_scale"):
        np.testing.assert_array_equal(
            getattr(native._snapshot, name), getattr(reference._snapshot, name), err_msg=name
        )
    if reference._leaf_stats is not None:
        assert native._leaf_stats is not None
        assert native._leaf_stats.to_json() == reference._leaf_stats.to_json()
    if reference._detector is not None:
        assert native._detector is not None
        got, want = native._detector.state(), reference._detector.state()
        assert got.keys() == want.keys()
        for key, value in want.items():
            if key == "recent":  # the signals: where each one fired, exactly alike
                assert got[key] == value
            else:
                assert got[key] == pytest.approx(value, rel=TOLERANCE, abs=TOLERANCE), key
    if reference._challenger is not None:
        assert native._challenger is not None
        got, want = native._challenger.state(), reference._challenger.state()
        assert got["errors"] == pytest.approx(want["errors"], rel=TOLERANCE)
        assert {k: v for k, v in got.items() if k != "errors"} == {
            k: v for k, v in want.items() if k != "errors"
        }
    assert native._params.keys() == reference._params.keys()
    for name, value in reference._params.items():
        np.testing.assert_allclose(
            native._params[name], value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name
        )
    averages = reference._optimizer.state_tensors()
    assert native._optimizer.state_tensors().keys() == averages.keys()
    for name, value in averages.items():
        got = native._optimizer.state_tensors()[name]
        np.testing.assert_allclose(got, value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)
    if reference._ridge is not None:
        assert native._ridge is not None
        for name in ("weights", "inv_gram", "mix_stats"):
            np.testing.assert_allclose(
                getattr(native._ridge, name), getattr(reference._ridge, name),
                rtol=TOLERANCE, atol=TOLERANCE, err_msg=name,
            )  # fmt: skip
    np.testing.assert_array_equal(native._standardizer.mean, reference._standardizer.mean)
    np.testing.assert_array_equal(native._standardizer.m2, reference._standardizer.m2)
