"""Feature importance of a ranking model: the features its predictions lean on."""

from __future__ import annotations

import random

import pytest

from banditree.core import Feedback
from banditree.learners import LearnerConfig, build_learner
from banditree.ranking import RankingModel
from banditree.ranking.importance import feature_importance

FOODS = {"pasta": "italian", "tacos": "mexican", "curry": "indian"}


def _model_and_rows() -> tuple[RankingModel, list[dict[str, object]]]:
    """Users who like one cuisine each; the weather is noise."""
    model = build_learner(LearnerConfig.model_validate({"task": "ranking"}))
    assert isinstance(model, RankingModel)
    likes = {"ann": "curry", "bob": "pasta", "cy": "tacos"}
    actions = [(food, {"cuisine": cuisine}) for food, cuisine in FOODS.items()]
    rng = random.Random(0)
    rows = []
    for t in range(400):
        user = rng.choice(list(likes))
        context = {"user": {"name": user}, "weather": rng.choice(["sun", "rain"])}
        d = model.rank(context, actions, f"e{t}")
        assert d.ranking is not None
        model.learn(d, Feedback(loss=0.0 if actions[d.action][0] == likes[user] else 1.0))
        rows.append({"offset": t, "ranking": d.ranking})
    return model, rows


def test_the_features_that_decide_come_first() -> None:
    model, rows = _model_and_rows()
    scores = feature_importance(model, rows, max_rows=200)
    by_name = {(s.side, s.name): s.score for s in scores}
    assert set(by_name) == {("context", "user.name"), ("context", "weather"), ("action", "cuisine")}
    assert scores[0].name in ("user.name", "cuisine")
    assert by_name["context", "user.name"] > 3 * by_name["context", "weather"]
    named = next(s for s in scores if s.name == "user.name")
    assert (named.namespace, named.feature) == ("user", "name")
    assert all(s.score >= 0 for s in scores)


def test_a_model_that_learned_nothing_has_no_features() -> None:
    model = build_learner(LearnerConfig.model_validate({"task": "ranking"}))
    assert isinstance(model, RankingModel)
    assert feature_importance(model, []) == []


def test_a_row_without_a_candidate_set_is_refused() -> None:
    model, _ = _model_and_rows()
    with pytest.raises(ValueError, match="row offset 7: not a ranking row"):
        feature_importance(model, [{"offset": 7, "action": 1}])
