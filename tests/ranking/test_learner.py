"""The ranking learner: decisions over changing candidate sets, cold start, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.ranking import MAX_CANDIDATES, RankingConfig, RankingLearner


def _learner(**kw: object) -> RankingLearner:
    return RankingLearner(RankingConfig(n_context_features=3, n_action_features=2, **kw))  # type: ignore[arg-type]


def test_probabilities_sum_to_one_over_any_candidate_count() -> None:
    learner = _learner()
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, MAX_CANDIDATES):
        d = learner.rank(rng.normal(size=3), rng.normal(size=(n, 2)), [f"a{i}" for i in range(n)])
        assert len(d.probabilities) == n
        assert abs(sum(d.probabilities) - 1.0) < 1e-9
        assert 0 <= d.chosen < n
        assert next(i for i, _ in d.ranking()) == d.chosen_id


def test_same_event_id_same_decision() -> None:
    a, b = _learner(seed=3), _learner(seed=3)
    rng = np.random.default_rng(1)
    c, f = rng.normal(size=3), rng.normal(size=(5, 2))
    ids = list("vwxyz")
    assert a.rank(c, f, ids, "e1") == b.rank(c, f, ids, "e1")


def test_learns_a_feature_match_and_scores_unseen_ids() -> None:
    """Reward 1 where the candidate's first feature has the context's sign: after training
    on ids a0..a9 it must rank fresh ids (never seen) by their features."""
    learner = _learner(seed=0)
    rng = np.random.default_rng(2)
    for t in range(3000):
        c = rng.normal(size=3)
        f = rng.normal(size=(6, 2))
        d = learner.rank(c, f, [f"a{(t + i) % 10}" for i in range(6)], f"e{t}")
        reward = float(np.sign(f[d.chosen, 0]) == np.sign(c[0]))
        learner.learn(d, reward)
    hits = 0
    for t in range(500):
        c = rng.normal(size=3)
        f = rng.normal(size=(6, 2))
        d = learner.rank(c, f, [f"new{t}_{i}" for i in range(6)], f"new{t}")
        hits += int(np.sign(f[d.greedy, 0]) == np.sign(c[0]))
    assert hits / 500 > 0.9


@pytest.mark.parametrize(
    ("context", "features", "ids", "message"),
    [
        ([0.0] * 3, np.zeros((0, 2)), [], "between 1 and 256"),
        ([0.0] * 3, np.zeros((257, 2)), [str(i) for i in range(257)], "between 1 and 256"),
        ([0.0] * 3, np.zeros((2, 2)), ["a", "a"], "unique"),
        ([0.0] * 2, np.zeros((1, 2)), ["a"], "expected 3 features"),
        ([0.0] * 3, np.zeros((1, 3)), ["a"], "expected 2 features per candidate"),
        ([np.nan, 0.0, 0.0], np.zeros((1, 2)), ["a"], "finite"),
    ],
)
def test_bad_requests_name_the_bound(context, features, ids, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        _learner().rank(context, features, ids)


def test_no_nan_after_absurd_reward() -> None:
    learner = _learner()
    rng = np.random.default_rng(4)
    d = learner.rank(rng.normal(size=3), rng.normal(size=(4, 2)), list("abcd"))
    with pytest.raises(ValueError, match="finite"):
        learner.learn(d, float("nan"))
    learner.learn(d, 1e300)  # clipped to [-1, 1]
    assert all(np.isfinite(v).all() for v in learner.params.values())
    assert np.isfinite(learner.scores(rng.normal(size=3), rng.normal(size=(4, 2)))).all()
