"""Capability members: what the service asks of a learner instead of its class.

``apprentice`` is the learner that takes the caller's default actions, ``explainer``
the learner that explains a decision as conditions on named features; None where the
learner cannot.
"""

from __future__ import annotations

from banditree.learners import Apprentice, FeaturedLearner, build_learner

FEATURES = {"age": "numeric", "country": {"type": "categorical", "max_categories": 4}}


def test_a_plain_learner_has_neither_capability() -> None:
    learner = build_learner({"n_features": 3, "n_actions": 2})
    assert learner.apprentice is None
    assert learner.explainer is None


def test_an_apprentice_takes_defaults_and_plays_them() -> None:
    learner = build_learner({"n_features": 3, "n_actions": 3, "mode": "apprentice"})
    assert isinstance(learner, Apprentice)
    taker = learner.apprentice
    assert taker is learner and learner.explainer is None
    decision = taker.act([0.1, 0.2, 0.3], event_id="e", default_action=2)
    assert decision.action == 2 and decision.propensity == 1.0
    columns = taker.act_columns([[0.1, 0.2, 0.3]] * 2, ["a", "b"], default_actions=[1, 0])
    assert columns.action == [1, 0] and columns.propensity == [1.0, 1.0]


def test_a_learner_of_named_features_explains() -> None:
    learner = build_learner({"n_actions": 3, "features": FEATURES})
    assert isinstance(learner, FeaturedLearner)
    explainer = learner.explainer
    assert explainer is learner and learner.apprentice is None
    why = explainer.explain({"age": 30.0, "country": "fr"})
    assert isinstance(why, list) and all(isinstance(line, str) for line in why)
