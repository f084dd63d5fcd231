"""The ranking model as a learner: JSON features, inferred schemas, exact restore, deferral."""

from __future__ import annotations

import random

import pytest

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.core.codec import decision_from_json, decision_record, record_json
from banditree.features import InvalidInput
from banditree.learners import LearnerConfig, build_learner, restore_learner
from banditree.ranking import RankingModel


def _round(rng: random.Random, n: int = 5) -> tuple[dict[str, object], list[tuple[str, object]]]:
    user = rng.choice(["ann", "bob"])
    actions = [
        (
            f"i{rng.randrange(1000)}-{j}",
            [{"color": rng.choice(["red", "blue"])}, {"price": rng.random()}],
        )
        for j in range(n)
    ]
    return {"user": {"name": user}}, actions


def _reward(context: dict[str, object], features: dict[str, object]) -> float:
    user = context["user"]["name"]  # type: ignore[index]
    return 1.0 if (user == "ann") == (features["color"] == "red") else 0.0


def test_learns_from_json_features_and_restores_exactly() -> None:
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel)
    rng = random.Random(0)
    first = model.rank(*_round(rng), event_id="e0")
    assert (
        first.ranking is not None and first.ranking["probabilities"] == [0.2] * 5
    )  # no schema yet
    for t in range(400):
        context, actions = _round(rng)
        d = model.rank(context, actions, event_id=f"e{t}")
        assert d.ranking is not None
        reward = _reward(context, d.ranking["features"][d.action])  # type: ignore[index]
        assert model.learn(d, Feedback(loss=1.0 - reward))
    assert model.counters["progressive_mean_loss"] < 0.15  # uniform play loses 0.5
    hits = 0
    for t in range(200):  # ids never seen: scored from their features alone
        context, actions = _round(rng)
        d = model.rank(context, actions, event_id=f"new{t}")
        hits += _reward(context, d.ranking["features"][d.greedy_action])  # type: ignore[index]
    assert hits / 200 > 0.95
    copy = restore_learner(*model.state())
    context, actions = _round(rng)
    assert copy.rank(context, actions, event_id="x") == model.rank(context, actions, event_id="x")  # type: ignore[attr-defined]


def test_the_decision_record_round_trips_and_others_keep_theirs() -> None:
    model = build_learner({"task": "ranking"})
    d = model.rank(
        {"a": 1.0},
        [("x", {"b": "u"}), ("y", {"b": "v"}), ("z", {})],
        "e1",
        excluded=["z"],
        active=False,
    )  # type: ignore[attr-defined]
    back = decision_from_json(record_json(decision_record(d)))
    assert back == d
    assert d.ranking["ids"] == ["x", "y"] and d.ranking["excluded"] == ["z"]
    assert d.ranking["active"] is False
    # a classification decision's stored forms hold no ranking key
    clf = build_learner({"n_features": 2, "n_actions": 3}).act([0.1, 0.2], event_id="c")
    assert "ranking" not in decision_record(clf) and "ranking" not in clf.to_dict()


def test_a_deferred_decision_is_not_learned() -> None:
    model = build_learner({"task": "ranking"})
    d = model.rank({"a": 1.0}, [("x", {"b": 1.0}), ("y", {"b": 2.0})], "e1", active=False)  # type: ignore[attr-defined]
    assert model.learn(d, Feedback(loss=0.0)) is False
    assert model.counters["feedback"] == 0 and model.version == 0


@pytest.mark.parametrize(
    ("actions", "excluded", "field"),
    [
        ([], (), "actions"),
        ([(f"a{i}", {}) for i in range(257)], (), "actions"),
        ([("a", {}), ("a", {})], (), "actions[1].id"),
        ([("", {})], (), "actions[0].id"),
        ([("a", 3)], (), "actions[0].features"),
        ([("a", {})], ("a",), "excluded_actions"),
    ],
)
def test_bad_candidates_name_the_field(
    actions: list[tuple[str, object]], excluded: tuple[str, ...], field: str
) -> None:
    model = build_learner({"task": "ranking"})
    with pytest.raises(InvalidInput) as err:
        model.rank({}, actions, "e", excluded=excluded)  # type: ignore[attr-defined]
    assert err.value.field == field


def test_config_refuses_what_a_ranking_model_cannot_take() -> None:
    with pytest.raises(ValueError, match="n_actions"):
        LearnerConfig(task="ranking", n_actions=3)
    with pytest.raises(ValueError, match=r"options\.nope"):
        LearnerConfig(task="ranking", options={"nope": 1})
    declared = LearnerConfig(
        task="ranking",
        options={
            "context_features": {"age": "numeric"},
            "action_features": {"kind": "categorical"},
        },
    )
    model = build_learner(declared)
    assert isinstance(model, RankingModel) and model.core is not None  # no inference needed
    with pytest.raises(ValueError, match="reward in"):
        d = model.rank({"age": 3}, [("a", {"kind": "x"})], "e")
        model.learn(d, Feedback(loss=2.5))


def test_the_served_encoding_cache_changes_no_decision() -> None:
    model = build_learner({"task": "ranking"})
    rng = random.Random(5)
    catalogue = _round(rng, 8)[1]  # the same items, offered again and again
    for t in range(60):
        context = {"user": {"name": rng.choice(["ann", "bob"])}}
        model.rank({"user": {"name": "cy"}}, catalogue, f"warm{t}")  # type: ignore[attr-defined]
        scorer = model._scorer  # type: ignore[attr-defined]
        assert (0 if scorer is None else len(scorer._rows)) == (8 if model.core else 0)
        d = model.rank(context, catalogue, f"e{t}")  # type: ignore[attr-defined]  (cache hits)
        cold = restore_learner(*model.state())  # the same model, nothing cached
        assert cold.rank(context, catalogue, f"e{t}").ranking == d.ranking  # type: ignore[attr-defined]
        model.learn(d, Feedback(loss=1.0 - _reward(context, d.ranking["features"][d.action])))  # type: ignore[index]
