"""``learn_batch`` leaves a learner exactly as ``learn`` called pair by pair does.

Refused pairs (a non-finite context, an action out of range, the wrong feedback) sit
inside the batches: each gets its error in its slot, the others are learned.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from banditree.learners import Decision, Feedback, Learner, build_learner
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


def named_log(actor: Learner, n: int, refused: bool = True) -> list[tuple[Decision, Feedback]]:
    """Pairs a named-feature learner decided and learned online: categories appear as it
    goes (its vocabularies grow between updates), with refused pairs mixed in."""
    log = []
    for i, ctx in enumerate(named_contexts(n)):
        d = actor.act(ctx)
        f = Feedback(loss=float(d.action != named_best(ctx)))
        actor.learn(d, f)
        log.append((d, f))
        if refused and i % 13 == 4:  # a value its schema refuses
            log.append((dataclasses.replace(d, context={**ctx, "age": "old"}), f))
        if refused and i % 19 == 8:
            log.append((d, Feedback(losses=(0.1, 0.2))))
        if refused and i % 23 == 2:
            log.append((dataclasses.replace(d, action=99), f))
    return log


def named_contexts(n: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(5)
    countries = ["DE", "FR", "US", "IT", "ES", "PL", "NL"]
    return [
        {
            "age": None if i % 7 == 0 else float(rng.integers(18, 80)),
            "country": countries[int(rng.integers(1 + min(6, i // 15)))],  # more as it goes
            "tags": ["a", "b", "c"][: int(rng.integers(4))],
            "user": {"os": ["ios", "android"][int(rng.integers(2))]},
        }
        for i in range(n)
    ]


def named_best(ctx: dict[str, object]) -> int:
    return 0 if ctx["country"] == "DE" else 1 if ctx["user"] == {"os": "ios"} else 2


NAMED = {
    "age": "numeric",
    "country": {"type": "categorical", "max_categories": 5},
    "tags": {"type": "tags", "max_categories": 4},
    "user": {"os": "categorical"},
}


@pytest.mark.parametrize("size", [1, 7, 64])
@pytest.mark.parametrize(
    "config",
    [{"kind": "dgt", "features": NAMED}, {"kind": "dgt"}, {"features": NAMED}],
    ids=["featured", "inferring", "featured-default"],
)
def test_named_learn_batch_equals_learn(config: dict[str, object], size: int) -> None:
    """Featured and inferring learners: the encoder shown to decisions is the one ``learn``
    published at the batch's last update, not the one after its last pair (a dgt core
    learns the batch in one call; the default, boosted, pair by pair)."""
    base = {"n_actions": 3, "seed": 4, "accumulate": 5, **config}
    pairs = named_log(build_learner(base), 150)
    if "features" not in config:  # the first pair refused: the schema is inferred from the second
        pairs.insert(0, (dataclasses.replace(pairs[0][0], context={}), pairs[0][1]))
    a, b = build_learner(base), build_learner(base)
    expected = one_by_one(a, pairs)
    assert in_batches(b, pairs, size) == expected
    assert any(isinstance(r, type) for r in expected) and any(r is True for r in expected)
    assert_same_state(a, b)
    for ctx in named_contexts(30):
        assert a.act(ctx) == b.act(ctx)
