"""The learner contract, run over every registered learner kind and every feedback type."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from banditree.learners import Decision, Feedback, InvalidInput, Learner, build_learner, known_kinds
from banditree.persistence import dumps, loads

N_FEATURES = 5
N_ACTIONS = 3


#: kinds for classification only: the uniform baseline and the boosted ensemble
CLASSIFICATION_ONLY = ("random", "boosted")
#: a boosted model's first fit and refit schedule, so that the runs below refit often
BOOSTED_OPTIONS = {"first_fit": 8, "refit_growth": 1.3, "linear_base": 1.0, "optimism": 0.5}


def contract_cases() -> list[tuple[str, str, str | None]]:
    cases: list[tuple[str, str, str | None]] = []
    for kind in known_kinds():
        cases.append((kind, "classification", None))
        if kind not in CLASSIFICATION_ONLY:
            cases += [(kind, "regression", "one_point"), (kind, "regression", "two_point")]
    return cases


CASES = contract_cases()
IDS = [f"{k}-{t}-{e or 'bandit'}" for k, t, e in CASES]


def make(kind: str, task: str, estimator: str | None, seed: int = 3) -> Learner:
    config: dict[str, Any] = {
        "kind": kind,
        "task": task,
        "n_features": N_FEATURES,
        "height": 3,
        "n_trees": 3,
        "learning_rate": 0.05,
        "accumulate": 3,
        "seed": seed,
    }
    if task == "classification":
        config["n_actions"] = N_ACTIONS
    else:
        config["estimator"] = estimator
    if kind == "boosted":
        config["options"] = BOOSTED_OPTIONS
    return build_learner(config)


def stream(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(loc=2.0, scale=3.0, size=(n, N_FEATURES))
    labels = (x[:, 0] > 2.0).astype(int) + (x[:, 1] > 2.0).astype(int)
    return x, labels


def feedback_for(learner: Learner, decision: Decision, label: int) -> Feedback:
    if learner.task == "classification":
        return Feedback(loss=0.0 if decision.action == label else 1.0)
    if decision.probes is not None:
        lo, hi = decision.probes
        return Feedback(losses=((lo - label) ** 2, (hi - label) ** 2))
    assert decision.value is not None
    return Feedback(loss=(decision.value - label) ** 2)


def run(learner: Learner, x: np.ndarray, labels: np.ndarray) -> list[Decision]:
    decisions = []
    for row, label in zip(x, labels, strict=True):
        d = learner.act(row)
        learner.learn(d, feedback_for(learner, d, int(label)))
        decisions.append(d)
    return decisions


def assert_same_state(a: Learner, b: Learner) -> None:
    ta, ma = a.state()
    tb, mb = b.state()
    assert ma == mb
    assert set(ta) == set(tb)
    for name in ta:
        np.testing.assert_array_equal(ta[name], tb[name], err_msg=name)


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_seeded_runs_are_identical(kind: str, task: str, estimator: str | None) -> None:
    x, labels = stream(40)
    a, b = make(kind, task, estimator), make(kind, task, estimator)
    assert [d.to_dict() for d in run(a, x, labels)] == [d.to_dict() for d in run(b, x, labels)]
    assert_same_state(a, b)
    if kind != "random":
        assert a.version > 0  # the runs did learn something


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_checkpoint_round_trip_resumes_identically(
    kind: str, task: str, estimator: str | None
) -> None:
    x, labels = stream(70)
    live = make(kind, task, estimator)
    run(live, x[:30], labels[:30])  # mid accumulation window: 16 eager rounds, 14 = 4 x 3 + 2
    assert getattr(live, "_pending", 2) == 2
    restored = loads(dumps(live))
    assert_same_state(live, restored)
    after_live = run(live, x[30:], labels[30:])
    after_restored = run(restored, x[30:], labels[30:])
    assert [d.to_dict() for d in after_live] == [d.to_dict() for d in after_restored]
    assert_same_state(live, restored)
    assert live.counters == restored.counters


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_context_is_not_mutated(kind: str, task: str, estimator: str | None) -> None:
    x, labels = stream(12)
    learner = make(kind, task, estimator)
    for row, label in zip(x, labels, strict=True):
        given = row.copy()
        d = learner.act(given)
        np.testing.assert_array_equal(given, row)
        as_list = [float(v) for v in row]
        learner.act(as_list)
        assert as_list == row.tolist()
        learner.learn(d, feedback_for(learner, d, int(label)))
        np.testing.assert_array_equal(given, row)
        assert d.context == tuple(row.tolist())


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_context_is_refused_and_model_unchanged(
    kind: str, task: str, estimator: str | None, bad: float
) -> None:
    x, labels = stream(10)
    learner = make(kind, task, estimator)
    run(learner, x, labels)
    before = make(kind, task, estimator)
    run(before, x, labels)
    context = x[0].copy()
    context[2] = bad
    with pytest.raises(InvalidInput, match=r"context\[2\]: must be finite"):
        learner.act(context)
    good = learner.act(x[0])
    forged = dataclasses.replace(good, context=tuple(context.tolist()))
    with pytest.raises(InvalidInput, match=r"decision.context\[2\]"):
        learner.learn(forged, feedback_for(learner, good, 0))
    before.act(x[0])  # the good decision above counted; mirror it
    assert_same_state(learner, before)


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_loss_is_refused_and_model_unchanged(
    kind: str, task: str, estimator: str | None, bad: float
) -> None:
    x, labels = stream(10)
    learner = make(kind, task, estimator)
    run(learner, x, labels)
    reference = loads(dumps(learner))
    d = learner.act(x[0])
    reference.act(x[0])
    with pytest.raises(ValueError, match="finite"):
        Feedback(loss=bad)
    with pytest.raises(ValueError, match="finite"):
        Feedback(losses=(0.0, bad))
    # a record that slipped past its own validation is still refused by the learner
    fb = feedback_for(learner, d, 0)
    field = "losses" if fb.losses is not None else "loss"
    object.__setattr__(fb, field, (bad, 0.0) if field == "losses" else bad)
    with pytest.raises(InvalidInput, match=f"{field}"):
        learner.check(d, fb)
    with pytest.raises(InvalidInput, match=f"{field}"):
        learner.learn(d, fb)
    assert_same_state(learner, reference)


@pytest.mark.parametrize("kind", [k for k in known_kinds() if k != "random"])
def test_late_feedback_uses_the_current_parameters(kind: str) -> None:
    """A decision learned after other updates gives the update of the CURRENT model:
    exactly what an identical decision made now would give."""
    x, labels = stream(60)
    learner = make(kind, "classification", None)
    run(learner, x[:10], labels[:10])
    late = learner.act(x[10])
    run(learner, x[11:40], labels[11:40])  # several updates happen meanwhile
    assert learner.version > late.model_version + 3
    fresh = dataclasses.replace(late, model_version=learner.version, event_id="now")
    twin = loads(dumps(learner))
    fb = Feedback(loss=0.0 if late.action == labels[10] else 1.0)
    for _ in range(3):  # a whole accumulation window of this feedback
        learner.learn(late, fb)
        twin.learn(fresh, fb)
    tensors, _ = learner.state()
    twin_tensors, _ = twin.state()
    for name in tensors:
        if name.startswith("param."):
            np.testing.assert_array_equal(tensors[name], twin_tensors[name], err_msg=name)
    # and the stored action is the one learned from (never re-sampled)
    other = loads(dumps(twin))
    moved = dataclasses.replace(fresh, action=(fresh.action or 0) + 1 if fresh.action != 2 else 0)
    for _ in range(3):
        other.learn(moved, fb)
        twin.learn(fresh, fb)
    differs = any(
        not np.array_equal(other.state()[0][n], twin.state()[0][n])
        for n in tensors
        if n.startswith("param.")
    )
    assert differs


def test_classification_loss_out_of_bounds_names_the_bound() -> None:
    learner = make("dgt", "classification", None)
    d = learner.act(np.zeros(N_FEATURES))
    with pytest.raises(InvalidInput, match=r"loss: must be in \[0.0, 1.0\], got 1.5"):
        learner.learn(d, Feedback(loss=1.5))
    with pytest.raises(InvalidInput, match="propensity"):
        learner.learn(dataclasses.replace(d, propensity=0.0), Feedback(loss=0.0))
    assert learner.counters["feedback"] == 0
