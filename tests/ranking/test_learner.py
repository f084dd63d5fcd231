"""The ranking learner: decisions over changing candidate sets, cold start, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.ranking import MAX_CANDIDATES, RankingConfig, RankingLearner
from banditree.ranking.settings import RIDGE_DEFER


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


def test_id_ramp_scales_the_tree_by_the_ids_plays() -> None:
    """With ``id_ramp`` r, an id played n times gets n / (n + r) of the tree's term; an id
    never played is scored by the ridge alone; the counts survive a checkpoint."""
    learner = _learner(seed=4, id_ramp=5.0)
    rng = np.random.default_rng(5)
    plays = {"a": 0, "b": 0}
    for _ in range(400):
        c, f = rng.normal(size=3), rng.normal(size=(2, 2))
        d = learner.rank(c, f, ["a", "b"])
        plays[d.chosen_id] += 1
        learner.learn(d, reward=float(f[d.chosen, 0] * c[0] > 0.3 * c[1] ** 2))
    assert min(plays.values()) > 0
    c, f = rng.normal(size=3), rng.normal(size=(1, 2))
    full = learner.scores(c, f)[0]
    fresh = learner.scores(c, f, ["never-played"])[0]
    tree = full - fresh
    assert abs(tree) > 1e-6
    for name, n in plays.items():
        assert learner.scores(c, f, [name])[0] == pytest.approx(fresh + tree * n / (n + 5.0))
    tensors, meta = learner.state_tensors()
    restored = _learner(seed=4, id_ramp=5.0)
    restored.load_state_tensors(tensors, meta)
    for name in ("a", "b", "never-played"):
        assert restored.scores(c, f, [name])[0] == learner.scores(c, f, [name])[0]
    off = _learner(seed=4, id_ramp=0.0)
    off.load_state_tensors({k: v for k, v in tensors.items() if k != "id_plays"}, meta)
    assert off.scores(c, f, ["never-played"])[0] == pytest.approx(full)
    with pytest.raises(ValueError, match="id_ramp"):
        _learner(id_ramp=-1.0)


def _run(learner: RankingLearner, rounds: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for t in range(rounds):
        c, f = rng.normal(size=3), rng.normal(size=(4, 2))
        d = learner.rank(c, f, [f"a{j}" for j in range(4)], f"e{seed}-{t}")
        learner.learn(d, reward=float(f[d.chosen, 0] * c[0] > 0))


def _assert_same_state(a: RankingLearner, b: RankingLearner) -> None:
    (ta, ma), (tb, mb) = a.state_tensors(), b.state_tensors()
    assert ma == mb and set(ta) == set(tb)
    for key, value in ta.items():
        assert value.tobytes() == tb[key].tobytes(), key


def test_checkpoint_between_folds_resumes_bit_for_bit() -> None:
    """A checkpoint holds the ridge's rounds not yet folded into its inverse: a learner
    restored between two folds goes on as the live one, bit for bit."""
    live = _learner(seed=6)
    _run(live, 3 * RIDGE_DEFER + 5, seed=7)
    assert live._ridge.pending_rounds[0] == 5
    restored = _learner(seed=6)
    restored.load_state_tensors(*live.state_tensors())
    _assert_same_state(live, restored)
    _run(live, RIDGE_DEFER, seed=8)
    _run(restored, RIDGE_DEFER, seed=8)
    _assert_same_state(live, restored)


def test_checkpoint_from_before_the_deferred_ridge_loads() -> None:
    """A checkpoint without the ridge's pending rounds (made before they existed, every
    round folded in) restores with none pending; a bad count is refused."""
    live = _learner(seed=6)
    _run(live, 2 * RIDGE_DEFER, seed=7)
    assert live._ridge.pending_rounds[0] == 0
    tensors, meta = live.state_tensors()
    old = {k: v for k, v in tensors.items() if k not in ("ridge.pending", "ridge.pending_rounds")}
    restored = _learner(seed=6)
    restored.load_state_tensors(old, meta)
    _assert_same_state(live, restored)
    for bad in (-1.0, 0.5, float(RIDGE_DEFER)):
        broken = {**tensors, "ridge.pending_rounds": np.array([bad])}
        with pytest.raises(ValueError, match="pending_rounds"):
            _learner(seed=6).load_state_tensors(broken, meta)
