"""The served scorer decides as the learner's own scores do, for the same event ids."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.learners import build_learner
from banditree.ranking import RankingModel

CATALOGUE = [f"item{j}" for j in range(40)]


def _features(rng: random.Random) -> dict[str, Any]:
    return {"genre": rng.choice("wxyz"), "price": rng.random(), "new": rng.random() < 0.5}


def _request(rng: random.Random, items: dict[str, dict[str, Any]]) -> tuple[Any, list[Any]]:
    context = [{"user": {"country": rng.choice("abc"), "age": rng.random()}}, {"t": "am"}]
    ids = rng.sample(CATALOGUE, rng.randint(1, 12))
    if rng.random() < 0.2:  # a new item, or an item whose features changed
        items[rng.choice(CATALOGUE)] = _features(rng)
    return context, [(i, items[i]) for i in ids]


def _reference(model: RankingModel, context: Any, actions: list[Any], event_id: str) -> Any:
    """The learner's own scores: every candidate encoded, crosses built, the tree routed."""
    assert model.core is not None
    ids = [a for a, _ in actions]
    c, a = model._encode(dict(context[0], **context[1]), [f for _, f in actions], served=True)
    chosen, pmf, greedy = model.core.choose(c, a, event_id, ids)
    return chosen, pmf, greedy, model.core.scores(c, a, ids)


def _tied(scores: np.ndarray) -> bool:
    """Whether the best two scores are equal up to rounding."""
    top = np.sort(scores)[-2:]
    return len(top) == 2 and top[1] - top[0] < 1e-9


@pytest.mark.parametrize(
    "config",
    [
        {"task": "ranking"},
        {"task": "ranking", "options": {"crosses": False}},
        {"task": "ranking", "options": {"tree": False}},
        {"task": "ranking", "options": {"id_ramp": 0}},
    ],
)
def test_served_decisions_are_the_learners_for_the_same_event_ids(config: dict[str, Any]) -> None:
    model = build_learner(config)
    assert isinstance(model, RankingModel)
    rng = random.Random(7)
    items = {i: _features(rng) for i in CATALOGUE}
    compared = explored = ties = 0
    for t in range(600):
        context, actions = _request(rng, items)
        d = model.rank(context, actions, f"e{t}")
        if model.core is not None:
            chosen, pmf, greedy, scores = _reference(model, context, actions, f"e{t}")
            ids, features = [a for a, _ in actions], [f for _, f in actions]
            served = model._served().scores(dict(context[0], **context[1]), ids, features)
            np.testing.assert_allclose(served, scores, rtol=1e-12, atol=1e-12)
            if _tied(scores):  # broken by rounding either way (the served scorer: first)
                assert scores[d.greedy_action] >= scores.max() - 1e-9
                ties += 1
            else:
                assert (d.action, d.greedy_action) == (chosen, greedy)
                # the explorer scales score gaps by its gamma (hundreds): a rounding of
                # 1e-16 in a score moves a probability by about 1e-13
                np.testing.assert_allclose(d.ranking["probabilities"], pmf, rtol=1e-10)
                compared += 1
                explored += d.explored
        if t % 3 == 0:  # learns between ranks: the scorer follows each new state
            played = d.ranking["features"][d.action]
            model.learn(d, Feedback(loss=0.0 if played["genre"] in "wx" else 1.0))
    assert compared > 550 and explored > 3  # exploring choices compared too
    assert ties < 10


def test_the_cache_is_keyed_by_id_and_features() -> None:
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel)
    rng = random.Random(1)
    items = {i: _features(rng) for i in CATALOGUE}
    for t in range(200):
        d = model.rank(*_request(rng, items), f"w{t}")
        model.learn(d, Feedback(loss=float(d.ranking["features"][d.action]["new"])))
    scorer = model._served()
    context = {"t": "am"}
    seen = {"genre": "w", "price": 0.5, "new": True}
    first = scorer.scores(context, ["item0", "item1"], [seen, seen])
    assert len(scorer._rows) == 2
    changed = {**seen, "new": False}  # the same id, other features: scored afresh
    second = scorer.scores(context, ["item0", "item1"], [changed, seen])
    assert len(scorer._rows) == 3 and second[1] == first[1] and second[0] != first[0]
    assert model._served() is scorer
    model.learn(model.rank(context, [("item0", seen)], "x"), Feedback(loss=0.0))
    assert model._served() is not scorer  # a learn makes a new scorer


def test_a_full_cache_starts_over_without_mixing_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows kept in a table of a few rows: cleared while a request keeps its new rows,
    the request's cached rows are read before, and every score stays the learner's."""
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel)
    rng = random.Random(3)
    items = {i: _features(rng) for i in CATALOGUE}
    for t in range(100):
        d = model.rank(*_request(rng, items), f"w{t}")
        model.learn(d, Feedback(loss=float(d.ranking["features"][d.action]["new"])))
    monkeypatch.setattr("banditree.ranking.served.CACHE_BYTES", 8 * 7 * 16)  # 7 rows
    scorer = model._served()
    assert scorer._max_rows == 7
    for t in range(60):
        context, actions = _request(rng, items)
        context = dict(context[0], **context[1])
        ids, features = [a for a, _ in actions], [f for _, f in actions]
        _, _, _, scores = _reference(model, [context, {}], actions, f"x{t}")
        np.testing.assert_allclose(
            scorer.scores(context, ids, features), scores, rtol=1e-12, atol=1e-12
        )
        assert len(scorer._rows) <= 7 and scorer._table.shape[0] <= 16
        assert scorer._set_rows == sum(len(r) for r in scorer._sets.values()) <= 7


def test_features_that_are_not_json_are_scored_and_not_cached() -> None:
    """A library caller's numpy values: scored as their numbers, their rows not kept."""
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel)
    rng = random.Random(5)
    items = {i: _features(rng) for i in CATALOGUE}
    for t in range(100):
        d = model.rank(*_request(rng, items), f"w{t}")
        model.learn(d, Feedback(loss=float(d.ranking["features"][d.action]["new"])))
    scorer = model._served()
    plain = {"genre": "w", "price": 0.25, "new": True}
    odd = {"genre": "x", "price": np.float64(0.75), "new": False}  # orjson refuses it
    expected = scorer.scores({"t": "am"}, ["a", "b"], [plain, {**odd, "price": 0.75}])
    scorer._rows.clear()
    got = scorer.scores({"t": "am"}, ["a", "b"], [plain, odd])
    np.testing.assert_array_equal(got, expected)
    assert list(scorer._rows) == [("a", b'{"genre":"w","price":0.25,"new":true}')]


def test_a_set_sent_again_is_one_lookup_with_the_same_scores() -> None:
    model = build_learner({"task": "ranking"})
    assert isinstance(model, RankingModel)
    rng = random.Random(2)
    items = {i: _features(rng) for i in CATALOGUE}
    for t in range(100):
        d = model.rank(*_request(rng, items), f"w{t}")
        model.learn(d, Feedback(loss=float(d.ranking["features"][d.action]["new"])))
    scorer = model._served()
    ids = CATALOGUE[:5]
    features = [items[i] for i in ids]
    first = scorer.scores({"t": "am"}, ids, features)
    assert len(scorer._sets) == 1
    scorer._rows.clear()  # the set's rows are found without the candidates' own
    again = scorer.scores({"t": "pm"}, ids, features)
    assert len(scorer._sets) == 1 and not scorer._rows
    context = {"t": "pm"}
    actions = list(zip(ids, features, strict=True))
    _, _, _, reference = _reference(model, [context, {}], actions, "x")
    np.testing.assert_allclose(again, reference, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(first, again)  # the context still counts
    changed = [*features[:4], {**features[4], "new": not features[4]["new"]}]
    scorer.scores(context, ids, changed)
    assert len(scorer._sets) == 2  # other features: another set
