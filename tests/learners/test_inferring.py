"""A model created without features infers its schema from the first context learned."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from banditree import persistence
from banditree.learners import (
    Decision,
    FeaturedLearner,
    Feedback,
    InferringLearner,
    InvalidInput,
    LearnerConfig,
    build_learner,
)


def context(r: random.Random) -> dict[str, Any]:
    return {
        "age": r.randint(18, 80),
        "country": r.choice(["DE", "FR", "US", "IT"]),
        "tags": ["a", "b", "c"][: r.randint(0, 3)],
        "user": {"os": r.choice(["ios", "android"]), "premium": r.random() < 0.5},
    }


def best(ctx: dict[str, Any]) -> int:
    return 0 if ctx["country"] == "DE" else 1 if ctx["user"]["os"] == "ios" else 2


def config_of(kind: str | None) -> dict[str, Any]:
    """An inferring model's config: ``kind`` None is the default's (boosted)."""
    return {"n_actions": 3, "seed": 3, **({} if kind is None else {"kind": kind})}


def build(kind: str | None = "dgt") -> InferringLearner:
    """An inferring model: a dgt tree, or the default kind (boosted) where a test says so."""
    learner = build_learner(config_of(kind))
    assert isinstance(learner, InferringLearner)
    return learner


def play(learner: InferringLearner, n: int, seed: int = 0) -> list[tuple[Decision, Feedback]]:
    r, log = random.Random(seed), []
    for _ in range(n):
        ctx = context(r)
        d = learner.act(ctx)
        f = Feedback(loss=float(d.action != best(ctx)))
        learner.learn(d, f)
        log.append((d, f))
    return log


def test_a_config_without_features_or_n_features_infers() -> None:
    config = LearnerConfig.model_validate({"n_actions": 3})
    assert config.features == "infer" and config.n_features == 1 and config.infers_features
    stored = LearnerConfig.from_stored(config.to_dict())
    assert stored.infers_features
    with pytest.raises(ValueError, match="n_features"):
        LearnerConfig.model_validate({"n_actions": 3, "features": "infer", "n_features": 4})
    with pytest.raises(ValueError, match="apprentice needs n_features"):
        LearnerConfig.model_validate({"n_actions": 3, "mode": "apprentice"})
    with pytest.raises(ValueError, match="features must be"):
        LearnerConfig.model_validate({"n_actions": 3, "features": "guess"})
    floats = LearnerConfig.model_validate({"n_actions": 3, "n_features": 4})
    assert floats.features is None and not floats.infers_features


def test_before_the_first_feedback_decisions_are_uniform_and_contexts_checked() -> None:
    learner = build()
    r = random.Random(0)
    decisions = [learner.act(context(r)) for _ in range(300)]
    assert learner.schema is None and learner.version == 0
    assert all(d.propensity == pytest.approx(1 / 3) for d in decisions)
    assert {d.action for d in decisions} == {0, 1, 2}
    assert isinstance(decisions[0].context, dict)  # the raw object, for the feedback
    assert len({d.event_id for d in decisions}) == 300
    for bad, field in [
        ([0.1, 0.2], "context"),
        ({}, "context"),  # nothing to infer from
        ({"age": None}, "context"),
        ({"country": "x" * 300}, "context.country"),
        ({"age": float("inf")}, "context.age"),
    ]:
        with pytest.raises(InvalidInput) as err:
            learner.act(bad)
        assert err.value.field == field, (bad, err.value)
    too_wide = {f"f{i}": f"v{i}" for i in range(400)}  # 400 x 34 one-hot columns
    with pytest.raises(InvalidInput, match="refuses"):
        learner.act(too_wide)
    assert learner.act_batch([context(r), context(r)])[1].propensity == pytest.approx(1 / 3)
    assert learner.predict([context(r)]).shape == (1,)


def test_the_schema_is_the_first_learned_context_s_not_the_first_decided() -> None:
    learner = build()
    first = learner.act({"age": 30, "color": "red"})
    second = learner.act({"age": 40, "country": "DE", "tags": ["x"], "premium": True})
    learner.learn(second, Feedback(loss=0.0))
    schema = learner.schema
    assert schema is not None
    assert {n: s.type for n, s in schema.features.items()} == {
        "age": "numeric",
        "country": "categorical",
        "tags": "tags",
        "premium": "boolean",
    }
    # the earlier decision learns with that schema: its unknown name is ignored
    learner.learn(first, Feedback(loss=1.0))
    assert learner.counters["feedback"] == 2
    # afterwards: a new name is ignored, a type that contradicts the schema is refused
    probe = {"age": 35, "country": "DE", "tags": [], "premium": False}
    assert np.array_equal(learner.predict([probe]), learner.predict([{**probe, "new": "x"}]))
    with pytest.raises(InvalidInput) as err:
        learner.act({"age": "old"})
    assert err.value.field == "context.age"
    assert learner.act({}).propensity > 0  # all missing: fine once the schema is known


@pytest.mark.parametrize(("kind", "rounds"), [("dgt", 2000), (None, 400)])
def test_learns_like_the_declared_schema_and_replays_exactly(kind: str | None, rounds: int) -> None:
    """A dgt tree learns the rule; the default (boosted, ``kind`` None: 400 rounds, its
    first seven fits) replays exactly too."""
    learner = build(kind)
    log = play(learner, rounds)
    if kind is None:
        assert learner.config()["kind"] == "boosted" and learner.inner.fits >= 7  # type: ignore[attr-defined]
    else:
        late = np.mean([f.loss for _, f in log[-500:]])
        assert late < 0.2  # the constant's loss is about 0.6
    schema = learner.schema
    assert schema is not None and schema.features["user.os"].type == "categorical"
    # the same log, learned by a model declared with the inferred schema: the same state
    declared = build_learner({**config_of(kind), "features": schema.to_json()})
    assert isinstance(declared, FeaturedLearner)
    for d, f in log:
        declared.learn(d, f)
    tensors, meta = learner.state()
    d_tensors, d_meta = declared.state()
    assert tensors.keys() == d_tensors.keys()
    assert all(np.array_equal(tensors[k], d_tensors[k]) for k in tensors)
    assert meta["features"] == d_meta["features"]  # the vocabularies
    # a replay of the log by a fresh model: the same encoder, the same decisions
    replayed = build(kind)
    for d, f in log:
        replayed.learn(d, f)
    assert replayed.schema == schema
    assert replayed.state()[1]["features"] == meta["features"]
    r = random.Random(9)
    probes = [context(r) for _ in range(50)]
    ids = [f"probe-{i}" for i in range(50)]
    a, b = learner.act_batch(probes, ids), replayed.act_batch(probes, ids)
    assert [(x.action, x.propensity, x.leaf) for x in a] == [
        (x.action, x.propensity, x.leaf) for x in b
    ]


def test_checkpoints_before_and_after_the_schema() -> None:
    learner = build()
    r = random.Random(1)
    pending = [learner.act(context(r)) for _ in range(3)]
    restored = persistence.loads(persistence.dumps(learner))
    assert isinstance(restored, InferringLearner) and restored.schema is None
    assert restored.counters["decisions"] == 3
    assert restored.act(context(r)).event_id == learner.act(context(r)).event_id
    for d in pending:
        learner.learn(d, Feedback(loss=0.5))
        restored.learn(d, Feedback(loss=0.5))
    play(learner, 300, seed=2)
    mid = persistence.loads(persistence.dumps(learner))
    assert isinstance(mid, InferringLearner) and mid.schema == learner.schema
    assert mid.config() == learner.config() and mid.config()["features"] == "infer"
    assert mid.version == learner.version
    for model in (learner, mid):
        play(model, 200, seed=4)
    probes = [context(random.Random(5)) for _ in range(20)]
    assert np.array_equal(learner.predict(probes), mid.predict(probes))
    assert learner.state()[1]["features"] == mid.state()[1]["features"]
    assert learner.export_model()["features"] == mid.export_model()["features"]


def test_regression_infers_too() -> None:
    learner = build_learner({"task": "regression", "seed": 1})
    assert isinstance(learner, InferringLearner)
    r = random.Random(3)
    before = learner.act({"price": 3.0, "brand": "a"})
    assert before.value is not None and learner.schema is None
    for _ in range(300):
        ctx = {"price": r.uniform(0, 10), "brand": r.choice(["a", "b"])}
        d = learner.act(ctx)
        assert d.value is not None
        learner.learn(d, Feedback(loss=(d.value - ctx["price"]) ** 2 / 100))
    schema = learner.schema
    assert schema is not None
    assert {n: s.type for n, s in schema.features.items()} == {
        "price": "numeric",
        "brand": "categorical",
    }
    assert learner.version > 0


def test_a_float_model_sent_an_object_says_how_to_send_objects() -> None:
    floats = build_learner({"n_actions": 2, "n_features": 3})
    with pytest.raises(InvalidInput, match="created with features"):
        floats.act({"age": 3})
    with pytest.raises(InvalidInput, match="created with features") as err:
        floats.act_batch([[0.0, 1.0, 2.0], {"age": 3}])
    assert err.value.field == "contexts[1]"
