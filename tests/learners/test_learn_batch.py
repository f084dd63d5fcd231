"""``learn_batch`` leaves a learner exactly as ``learn`` called pair by pair does.

Refused pairs (a non-finite context, an action out of range, the wrong feedback) sit
inside the batches: each gets its error in its slot, the others are learned.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from banditree.learners import Decision, Feedback, Learner
from tests.learners.test_contract import (
    CASES,
    IDS,
    assert_same_state,
    feedback_for,
    make,
    stream,
)


def logged(
    kind: str, task: str, estimator: str | None, n: int = 120
) -> list[tuple[Decision, Feedback]]:
    """Pairs a learner of this case decided and learned online, with refused ones mixed in."""
    actor = make(kind, task, estimator)
    x, labels = stream(n, seed=11)
    pairs = []
    for i, (row, label) in enumerate(zip(x, labels, strict=True)):
        d = actor.act(row)
        f = feedback_for(actor, d, int(label))
        actor.learn(d, f)
        pairs.append((d, f))
        if i % 17 == 5:  # a non-finite context
            pairs.append((dataclasses.replace(d, context=(float("nan"),) * len(row)), f))
        if i % 23 == 7:  # feedback of the wrong shape for this learner
            wrong = Feedback(losses=(0.1, 0.2)) if f.loss is not None else Feedback(loss=0.3)
            pairs.append((d, wrong))
        if i % 29 == 3 and d.action is not None:  # an action the model does not have
            pairs.append((dataclasses.replace(d, action=99), f))
    return pairs


def one_by_one(learner: Learner, pairs: list[tuple[Decision, Feedback]]) -> list[object]:
    out: list[object] = []
    for d, f in pairs:
        try:
            out.append(learner.learn(d, f))
        except (ValueError, KeyError, TypeError) as err:
            out.append(type(err))
    return out


def in_batches(learner: Learner, pairs: list[tuple[Decision, Feedback]], size: int) -> list[object]:
    out: list[object] = []
    for start in range(0, len(pairs), size):
        part = pairs[start : start + size]
        results = learner.learn_batch([d for d, _ in part], [f for _, f in part])
        assert len(results) == len(part)
        out += [r if isinstance(r, bool) else type(r) for r in results]
    return out


@pytest.mark.parametrize("size", [1, 7, 64])
@pytest.mark.parametrize(("kind", "task", "estimator"), CASES, ids=IDS)
def test_learn_batch_equals_learn(kind: str, task: str, estimator: str | None, size: int) -> None:
    pairs = logged(kind, task, estimator)
    a, b = make(kind, task, estimator), make(kind, task, estimator)
    expected = one_by_one(a, pairs)
    assert in_batches(b, pairs, size) == expected
    assert any(isinstance(r, type) for r in expected)  # refused pairs were in the batches
    assert kind == "random" or any(r is True for r in expected)
    assert_same_state(a, b)
    assert a.version == b.version
    # the served version decides as learn's does
    x, _ = stream(20, seed=99)
    for row in x:
        assert a.act(row) == b.act(row)


def test_learn_batch_serves_a_prepared_tree() -> None:
    """The last version of a batch is served with its one-context fast path built."""
    pairs = logged("dgt", "classification", None)
    learner = make("dgt", "classification", None)
    learner.learn_batch([d for d, _ in pairs], [f for _, f in pairs])
    assert "_fast_path" in vars(learner._snapshot.frozen)  # type: ignore[attr-defined]


def test_ragged_contexts_go_pair_by_pair() -> None:
    """A batch whose contexts are not one array is learned through ``learn``."""
    pairs = logged("dgt", "classification", None, n=40)
    short = dataclasses.replace(pairs[3][0], context=(1.0, 2.0))
    pairs.insert(4, (short, pairs[3][1]))
    a, b = make("dgt", "classification", None), make("dgt", "classification", None)
    expected = one_by_one(a, pairs)
    assert in_batches(b, pairs, 64) == expected
    assert expected[4] is not True and expected[4] is not False
    assert_same_state(a, b)
    assert np.isfinite(b.state()[0]["std.mean"]).all()
