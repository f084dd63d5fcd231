"""``act_batch`` makes, row for row, the decisions of ``act`` called in a loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from banditree.explore import (
    EpsilonGreedy,
    FastCB,
    Softmax,
    SquareCB,
    event_uniform_rows,
    event_uniforms,
    explore_rows,
    sample_action,
    sample_actions,
)
from banditree.learners import Decision, InvalidInput, Learner, build_learner
from banditree.models.spec import ModelSpec
from tests.learners.test_contract import CASES, IDS, feedback_for, make, stream

#: settings beyond the contract's defaults that exercise the other batched paths
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("tel", {"options": {"gamma": 0.05}}),  # hard routing: conditional batch pruning
    ("hinge", {"n_trees": 1}),  # one tree reports its leaf
    ("hinge", {"options": {"ferns": True}, "n_trees": 1}),
    ("dgt_forest", {"aggregate": "average"}),
    ("dgt", {"explorer": "softmax", "explorer_parameter": 0.05}),
    ("tel", {"explorer": "squarecb"}),
    ("linear", {"reward_link": "identity", "explorer": "softmax"}),
    ("dgt", {"linear_term": True, "linear_learning_rate": 0.3}),  # the per-action linear term
    ("dgt", {"linear_term": True, "shared_bias": False, "explorer": "epsilon_greedy"}),
    ("dgt", {"linear_term": False, "max_importance_weight": 3.0}),  # the previous default
    ("dgt_forest", {"linear_term": True}),
]


def trained(kind: str, task: str, estimator: str | None, **extra: Any) -> Learner:
    """A learner that has learned from 30 rounds (non-trivial statistics and parameters)."""
    learner = make(kind, task, estimator) if not extra else _build(kind, extra)
    x, labels = stream(30, seed=5)
    for row, label in zip(x, labels, strict=True):
        d = learner.act(row)
        learner.learn(d, feedback_for(learner, d, int(label)))
    return learner


def _build(kind: str, extra: dict[str, Any]) -> Learner:
    config: dict[str, Any] = {
        "kind": kind,
        "n_features": 5,
        "n_actions": 3,
        "height": 3,
        "n_trees": 3,
        "learning_rate": 0.05,
        "accumulate": 3,
        "seed": 3,
        **extra,
    }
    return build_learner(config)


def assert_same_decisions(batch: list[Decision], loop: list[Decision]) -> None:
    assert len(batch) == len(loop)
    for got, want in zip(batch, loop, strict=True):
        g, w = got.to_dict(), want.to_dict()
        # floats: equal up to rounding (a batched product may add in another order)
        for name in ("propensity", "value", "greedy_value", "probes", "extras"):
            got_value, want_value = g.pop(name), w.pop(name)
            if want_value is None:
                assert got_value is None, name
            else:
                assert got_value == pytest.approx(want_value, rel=1e-12, abs=1e-12), name
        assert g == w  # event id, context, version, action, greedy, leaf, explored ...


def check_batch_equals_loop(a: Learner, b: Learner) -> None:
    x, _ = stream(57, seed=9)
    ids: list[str | None] = [None if i % 3 else f"given-{i}" for i in range(len(x))]
    loop = [a.act(row, event_id) for row, event_id in zip(x, ids, strict=True)]
    batch = b.act_batch(x, ids)
    assert_same_decisions(batch, loop)
    # generated ids continue from the same count afterwards
    assert a.counters == b.counters
    assert_same_decisions(b.act_batch(x[:4].tolist()), [a.act(row) for row in x[:4]])


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_act_batch_equals_act_loop(kind: str, task: str, estimator: str | None) -> None:
    check_batch_equals_loop(trained(kind, task, estimator), trained(kind, task, estimator))


@pytest.mark.parametrize("kind,extra", VARIANTS, ids=[f"{k}-{e}" for k, e in VARIANTS])
def test_act_batch_equals_act_loop_variants(kind: str, extra: dict[str, Any]) -> None:
    a, b = trained(kind, "", None, **extra), trained(kind, "", None, **extra)
    check_batch_equals_loop(a, b)
    if kind == "hinge":
        assert all(d.leaf is not None for d in b.act_batch(stream(3)[0]))


def test_act_batch_default_loop_matches_act() -> None:
    """The base class default (a loop of ``act``) keeps the same contract."""
    a = trained("tel", "classification", None)
    b = trained("tel", "classification", None)
    x, _ = stream(9, seed=2)
    assert_same_decisions(Learner.act_batch(b, x), [a.act(row) for row in x])


@pytest.mark.parametrize("kind", ["tel", "random"])
def test_act_batch_refuses_bad_input_before_deciding(kind: str) -> None:
    learner = trained(kind, "classification", None)
    before = learner.counters
    x, _ = stream(4)
    bad = x.copy()
    bad[2, 1] = np.nan
    with pytest.raises(InvalidInput, match=r"contexts\[2\]\[1\]: must be finite"):
        learner.act_batch(bad)
    with pytest.raises(InvalidInput, match="contexts: must be a list of contexts of exactly 5"):
        learner.act_batch(x[:, :4])
    with pytest.raises(InvalidInput, match="event_ids: must hold exactly 4 ids"):
        learner.act_batch(x, ["a", "b"])
    assert learner.counters == before  # nothing was decided
    assert learner.act_batch([]) == []


@pytest.mark.parametrize(
    "explorer",
    [EpsilonGreedy(0.2), Softmax(0.3), SquareCB(10.0, 0.5), FastCB(50.0, 0.5)],
    ids=lambda e: e.name,
)
def test_explorer_rows_and_sampling_equal_per_row(
    explorer: EpsilonGreedy | Softmax | SquareCB | FastCB,
) -> None:
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=(200, 7))
    scores[:5, 2:4] = 0.9  # ties: the lowest index wins either way
    pmfs = explore_rows(explorer, scores, 17)
    np.testing.assert_array_equal(pmfs, np.stack([explorer(row, 17) for row in scores]))
    u = rng.uniform(size=200)
    u[0], u[1] = 0.0, np.nextafter(1.0, 0.0)
    actions = sample_actions(pmfs, u)
    assert actions.tolist() == [sample_action(p, v) for p, v in zip(pmfs, u, strict=True)]


@pytest.mark.parametrize("kind", ["dgt", "dgt_forest", "tel", "hinge", "linear"])
def test_batched_forward_rows_equal_the_per_row_default(kind: str) -> None:
    """Each family's ``forward_rows`` against the base class's loop of ``forward``."""
    learner: Any = trained(kind, "classification", None)
    model, frozen = learner.model, learner._snapshot.frozen
    x, _ = stream(20, seed=4)
    got = model.forward_rows(frozen, x)
    want = ModelSpec.forward_rows(model, frozen, x)
    np.testing.assert_allclose(got.output, want.output, rtol=1e-12, atol=1e-12)
    assert (got.leaf is None) == (want.leaf is None)
    if want.leaf is not None:
        np.testing.assert_array_equal(got.leaf, want.leaf)
    assert (got.scores is None) == (want.scores is None)
    if want.scores is not None:
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-12, atol=1e-12)
    assert set(got.extras) == set(want.extras)
    for name, column in want.extras.items():
        np.testing.assert_array_equal(got.extras[name], column)
    assert ModelSpec.forward_rows(model, frozen, x[:0]).output.shape == (0, model.n_outputs)


@pytest.mark.parametrize("seed", [0, 7, 2**40])
def test_event_uniform_rows_are_event_uniforms_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed % 1000)
    ids = [rng.bytes(18).hex() for _ in range(5000)] + ["", "a", "\u00fc\u20ac", "x" * 128]
    rows = event_uniform_rows(seed, ids)
    assert rows.shape == (len(ids), 2) and rows.dtype == np.float64
    expected = [event_uniforms(seed, event_id) for event_id in ids]
    assert [tuple(row) for row in rows.tolist()] == expected
    assert event_uniform_rows(seed, []).shape == (0, 2)
