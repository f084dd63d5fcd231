"""Learners with a feature schema: JSON contexts, checkpoints and exact replay."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from banditree import persistence
from banditree.learners import (
    Decision,
    FeaturedLearner,
    Feedback,
    InvalidInput,
    LearnerConfig,
    build_learner,
)

FEATURES = {
    "age": "numeric",
    "country": {"type": "categorical", "max_categories": 4},
    "tags": {"type": "tags", "max_categories": 4},
    "premium": "boolean",
    "user": {"os": "categorical"},
}


def contexts(n: int, seed: int = 0) -> list[dict[str, Any]]:
    r = random.Random(seed)
    return [
        {
            "age": r.choice([r.randint(18, 80), None]),
            "country": r.choice(["DE", "FR", "US", "IT", "ES", None]),
            "tags": ["a", "b", "c"][: r.randint(0, 3)],
            "premium": r.random() < 0.5,
            "user": {"os": r.choice(["ios", "android"])},
        }
        for _ in range(n)
    ]


def best(ctx: dict[str, Any]) -> int:
    """The action of loss 0: a rule on the categories alone."""
    return 0 if ctx["country"] == "DE" else 1 if ctx["user"]["os"] == "ios" else 2


def run(learner: FeaturedLearner, data: list[dict[str, Any]]) -> list[tuple[Decision, Feedback]]:
    log = []
    for ctx in data:
        d = learner.act(ctx)
        f = Feedback(loss=float(d.action != best(ctx)))
        learner.learn(d, f)
        log.append((d, f))
    return log


def build(**extra: Any) -> FeaturedLearner:
    """A dgt tree on the encoded features (the encoder is the same for every kind; the
    default, boosted, on named features: ``tests/learners/test_boosted.py``)."""
    learner = build_learner({"kind": "dgt", "n_actions": 3, "features": FEATURES, **extra})
    assert isinstance(learner, FeaturedLearner)
    return learner


def test_width_is_derived_and_a_contradicting_n_features_is_refused() -> None:
    assert build().n_features == 2 + 6 + 6 + 2 + 34
    with pytest.raises(ValueError, match="n_features"):
        LearnerConfig.model_validate({"n_actions": 3, "features": FEATURES, "n_features": 5})


def test_learns_a_rule_on_categories() -> None:
    learner = build()
    log = run(learner, contexts(3000))
    late = np.mean([f.loss for _, f in log[-1000:]])
    assert late < 0.15  # the constant's loss is about 0.55
    test = contexts(500, seed=1)
    assert np.mean(learner.predict(test) == np.array([best(c) for c in test])) > 0.9


def test_decisions_keep_the_raw_context_and_round_trip() -> None:
    learner = build()
    ctx = contexts(1)[0]
    d = learner.act(ctx)
    assert d.context == ctx
    again = Decision.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again == d
    assert learner.act_batch([ctx, ctx])[0].context == ctx


def test_checkpoint_restores_the_same_decisions_and_updates() -> None:
    learner = build()
    run(learner, contexts(403))  # leaves feedback buffered in the window
    restored = persistence.loads(persistence.dumps(learner))
    rest = contexts(200, seed=2)
    a, b = run(learner, rest), run(restored, rest)  # type: ignore[arg-type]
    assert [(d.action, d.propensity, d.leaf) for d, _ in a] == [
        (d.action, d.propensity, d.leaf) for d, _ in b
    ]
    ta, _ = learner.state()
    tb, _ = restored.state()
    assert set(ta) == set(tb) and all(np.array_equal(ta[k], tb[k]) for k in ta)


def test_replaying_the_log_rebuilds_the_state_exactly() -> None:
    live = build(seed=5)
    log = run(live, contexts(600, seed=3))
    stored = [json.loads(json.dumps((d.to_dict(), f.to_dict()))) for d, f in log]
    replica = build(seed=5)
    for d, f in stored:
        replica.learn(Decision.from_dict(d), Feedback.from_dict(f))
    ta, ma = live.state()
    tb, mb = replica.state()
    assert all(np.array_equal(ta[k], tb[k]) for k in ta)
    assert ma["features"] == mb["features"]
    probe = contexts(50, seed=9)
    assert np.array_equal(live.predict(probe), replica.predict(probe))


def test_bad_contexts_name_the_field_and_leave_the_model_unchanged() -> None:
    learner = build()
    with pytest.raises(InvalidInput) as err:
        learner.act({"age": "x"})
    assert err.value.field == "context.age"
    with pytest.raises(InvalidInput) as err:
        learner.act([1.0, 2.0])
    assert err.value.field == "context"
    with pytest.raises(InvalidInput) as err:
        learner.act_batch([{"age": 1}, {"country": ["DE"]}])
    assert err.value.field == "contexts[1].country"
    d = learner.act({"age": 3})
    before = learner.state()[1]["features"]
    with pytest.raises(InvalidInput):
        learner.learn(d, Feedback(loss=2.0))
    assert learner.state()[1]["features"] == before


def test_a_wide_one_hot_model_keeps_the_ridge_within_its_own_bound() -> None:
    wide = {f"c{i}": {"type": "categorical", "max_categories": 30} for i in range(10)}
    config = LearnerConfig.model_validate({"kind": "dgt", "n_actions": 4, "features": wide})
    assert config.n_features == 320 and config.uses_ridge  # 4 * 321^2 > 250,000
    learner = build_learner(config)
    assert isinstance(learner, FeaturedLearner)
    assert getattr(learner.inner, "_ridge", None) is not None
    default = build_learner({"n_actions": 4, "features": wide})  # boosted: its online tree
    assert getattr(default.inner, "_starter")._ridge is not None  # noqa: B009
    plain = LearnerConfig.model_validate({"kind": "dgt", "n_actions": 4, "n_features": 320})
    assert not plain.uses_ridge
    huge = {f"c{i}": {"type": "categorical", "max_categories": 100} for i in range(10)}
    assert not LearnerConfig.model_validate(
        {"kind": "dgt", "n_actions": 4, "features": huge}
    ).uses_ridge
