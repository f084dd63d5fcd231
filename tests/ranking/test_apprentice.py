"""Apprentice mode for ranking: the baseline is played while the model learns from it."""

from __future__ import annotations

import random

import pytest

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.features import InvalidInput
from banditree.learners import build_learner, restore_learner
from banditree.ranking import RankingModel


def _round(rng: random.Random) -> tuple[dict[str, str], list[tuple[str, dict[str, str]]]]:
    user = rng.choice(["jock", "geek"])
    actions = [
        (f"a{rng.randrange(10**6)}", {"topic": rng.choice(["sport", "tech"])}) for _ in range(4)
    ]
    return {"user": user}, actions


def _reward(context: dict[str, str], features: dict[str, str]) -> float:
    return float((context["user"] == "jock") == (features["topic"] == "sport"))


def test_the_baseline_is_played_and_the_model_learns_to_beat_it() -> None:
    model = build_learner({"task": "ranking", "mode": "apprentice"})
    assert isinstance(model, RankingModel) and model.mode == "apprentice"
    rng = random.Random(0)
    for t in range(300):
        context, actions = _round(rng)
        excluded = [actions[0][0]] if t % 5 == 0 else []
        d = model.rank(context, actions, f"e{t}", excluded=excluded)
        played = 1 if excluded else 0  # the first candidate not excluded
        assert d.ranking is not None and d.ranking["ids"][d.action] == actions[played][0]
        assert d.propensity == 1.0 and sum(d.ranking["probabilities"]) == 1.0
        assert d.extras["apprentice"] == 1.0 and not d.explored
        model.learn(d, Feedback(loss=1.0 - _reward(context, d.ranking["features"][d.action])))
    figures = model.agreement()
    assert figures["decisions_compared"] == 300 and figures["default_feedback"] == 300
    assert 0.4 < figures["default_observed_reward"] < 0.6  # the baseline: a coin toss
    assert figures["estimated_reward"] > figures["default_estimated_reward"] + 0.2
    # the checkpoint keeps the mode and the figures
    restored = restore_learner(*model.state())
    assert isinstance(restored, RankingModel) and restored.mode == "apprentice"
    assert restored.agreement() == figures
    # online, it ranks by what it learned from the baseline's rewards
    model.set_mode("online")
    hits = 0
    for t in range(100):
        context, actions = _round(rng)
        d = model.rank(context, actions, f"o{t}")
        assert "apprentice" not in d.extras
        hits += int(_reward(context, d.ranking["features"][d.action]))  # type: ignore[index]
    assert hits >= 85
    assert restore_learner(*model.state()).mode == "online"  # type: ignore[attr-defined]


def test_a_slot_plays_its_baseline_action() -> None:
    model = build_learner({"task": "ranking", "mode": "apprentice"})
    assert isinstance(model, RankingModel)
    actions = [("a", {"k": "x"}), ("b", {"k": "y"}), ("c", {"k": "z"})]
    d = model.rank({"u": 1.0}, actions, "s", baseline="c")
    assert d.ranking is not None and d.ranking["ids"][d.action] == "c"
    gone = model.rank({"u": 1.0}, actions, "t", baseline="c", excluded=["c"])  # taken
    assert gone.ranking is not None and gone.ranking["ids"][gone.action] == "a"


def test_a_model_created_online_has_no_apprentice_mode() -> None:
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel) and not model.apprentice_created
    with pytest.raises(InvalidInput, match="created online"):
        model.set_mode("apprentice")
    d = model.rank({"u": 1.0}, [("a", {"k": "x"}), ("b", {"k": "y"})], "e")
    assert d.extras == {}  # an online decision's record is as before
