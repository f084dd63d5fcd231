"""Warm starts of the boosted kind (``warm_every``): trees grown between scheduled fits on
the rounds the last fit has not read, boosted from the ensemble's predictions."""

from __future__ import annotations

from typing import Any

import lightgbm as lgb
import numpy as np
import pytest

from banditree.learners import Feedback, build_learner
from banditree.learners.boosted import BoostedBandit, refits
from banditree.learners.boosted import learner as learner_module
from banditree.models.boosted.fit import BoostingSettings, augment, fit_ensemble, grow_ensemble
from banditree.persistence import dumps, loads
from tests.learners.test_contract import assert_same_state

D, K = 4, 3


def rounds(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D))
    labels = (x[:, 0] * x[:, 1] > 0).astype(int) + (x[:, 2] > 1.0).astype(int)
    return x, labels


def boosted(**options: Any) -> BoostedBandit:
    learner = build_learner(
        {"kind": "boosted", "n_features": D, "n_actions": K, "seed": 3, "n_trees": 10,
         "options": {"first_fit": 40, "refit_growth": 2.0, **options}}
    )  # fmt: skip
    assert isinstance(learner, BoostedBandit)
    return learner


def play(learner: BoostedBandit, x: np.ndarray, labels: np.ndarray) -> list[Any]:
    """Each round's decision and the ensemble's number of trees after it learned."""
    out = []
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
        ensemble = learner._ensemble
        out.append((d.to_dict(), 0 if ensemble is None else ensemble.n_trees, learner.fits))
    return out


@pytest.mark.parametrize("linear", [None, 10.0])
def test_grown_trees_predict_what_lightgbm_boosts_from_the_initial_scores(
    linear: float | None,
) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, D))
    actions = rng.integers(0, K, size=400)
    rewards = ((x[:, 0] > 0) == (actions == 1)).astype(float)
    settings = BoostingSettings(n_trees=6, depth=3, linear_l2=linear)
    old = fit_ensemble(x[:300], actions[:300], rewards[:300], K, settings, 0)
    grown = grow_ensemble(old, x[300:], actions[300:], rewards[300:], K, settings, 4, 0)
    assert grown.n_trees == 10
    np.testing.assert_array_equal(grown.features[:6], old.features)
    np.testing.assert_array_equal(grown.base, old.base)  # the linear base is kept
    inputs = augment(x[300:], actions[300:], K)
    init = old.predict_rows(inputs)
    params = {
        "objective": "regression", "learning_rate": 0.3, "max_depth": 3, "num_leaves": 8,
        "min_data_in_leaf": 5, "min_sum_hessian_in_leaf": 0.0, "lambda_l2": 1.0,
        "max_bin": 63, "min_data_in_bin": 1, "use_missing": False,
        "feature_pre_filter": False, "num_threads": 1, "deterministic": True,
        "force_row_wise": True, "seed": 0, "verbosity": -1, "boost_from_average": False,
    }  # fmt: skip
    booster = lgb.train(
        params, lgb.Dataset(inputs, label=rewards[300:], init_score=init), num_boost_round=4
    )
    np.testing.assert_allclose(
        grown.predict_rows(inputs), init + booster.predict(inputs), atol=1e-9
    )
    # the new trees fit what the old ensemble left on these rows
    before = np.mean((init - rewards[300:]) ** 2)
    assert np.mean((grown.predict_rows(inputs) - rewards[300:]) ** 2) < 0.8 * before
    assert (grown.uncertainty[6:] > 0).any() and (grown.uncertainty >= 0).all()


def test_a_warm_start_needs_rows_and_trees() -> None:
    rng = np.random.default_rng(1)
    x, actions = rng.normal(size=(50, D)), rng.integers(0, K, size=50)
    settings = BoostingSettings(n_trees=3, depth=2)
    old = fit_ensemble(x, actions, rng.random(50), K, settings, 0)
    with pytest.raises(ValueError, match="needs rows and trees"):
        grow_ensemble(old, x[:0], actions[:0], np.zeros(0), K, settings, 2, 0)
    with pytest.raises(ValueError, match="needs rows and trees"):
        grow_ensemble(old, x, actions, rng.random(50), K, settings, 0, 0)


def test_trees_grow_between_fits_every_warm_every_rounds_up_to_n_trees_more() -> None:
    x, labels = rounds(400)
    cold = play(boosted(), x, labels)
    warm = play(boosted(warm_every=15, warm_trees=4), x, labels)
    assert {trees for _, trees, _ in cold[40:]} == {10}  # off by default: fits only
    grew = [i + 1 for i in range(1, len(warm)) if warm[i][1] > warm[i - 1][1] > 0]
    # fits after 40, 80, 160, 320 (growth 2); 4 trees 15 rounds after each, twice at
    # most (10 + 8 <= 20; a third would pass n_trees grown on one fit)
    assert grew == [55, 70, 95, 110, 175, 190, 335, 350]
    assert [warm[i - 1][1] for i in grew] == [14, 18] * 4
    assert warm[79][1] == warm[159][1] == warm[319][1] == 10  # each fit starts afresh
    assert [f for _, _, f in warm] == [f for _, _, f in cold]  # the same fit schedule
    assert [d for d, _, _ in warm[:55]] == [d for d, _, _ in cold[:55]]
    assert [d for d, _, _ in warm[55:]] != [d for d, _, _ in cold[55:]]


def test_a_warm_start_reads_the_rounds_the_deciding_fit_has_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A background fit's rows end where it started, not where it is used."""
    monkeypatch.setattr(learner_module, "BACKGROUND_ROWS", 60)
    monkeypatch.setattr(refits, "FIT_LAG", 15)
    grown_rows: list[int] = []
    real = learner_module.grow_ensemble

    def counting(ensemble: Any, contexts: np.ndarray, *args: Any) -> Any:
        grown_rows.append(len(contexts))
        return real(ensemble, contexts, *args)

    monkeypatch.setattr(learner_module, "grow_ensemble", counting)
    x, labels = rounds(200)
    learner = boosted(warm_every=10, warm_trees=2)
    play(learner, x, labels)
    # the fit of 40 rows is used at once and grown after 50, 60, ..., 90 (on rounds
    # 41-50, ..., 41-90: the fit started after 80 is pending); that one is used after
    # 95 and grown after 105 and 115 on rounds 81-105 and 81-115
    assert grown_rows[:7] == [10, 20, 30, 40, 50, 25, 35]


@pytest.mark.parametrize("cut", [47, 100, 150])
def test_checkpoints_resume_identically_with_trees_grown(
    monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    monkeypatch.setattr(learner_module, "BACKGROUND_ROWS", 60)
    monkeypatch.setattr(refits, "FIT_LAG", 15)
    x, labels = rounds(260)
    live = boosted(warm_every=7, warm_trees=3)
    play(live, x[:cut], labels[:cut])
    restored = loads(dumps(live))
    assert isinstance(restored, BoostedBandit)
    assert_same_state(live, restored)
    assert play(live, x[cut:], labels[cut:]) == play(restored, x[cut:], labels[cut:])
    assert live._warm_added > 0


@pytest.mark.parametrize("size", [1, 13, 200])
def test_batches_learn_what_learn_learns_with_warm_starts(size: int) -> None:
    x, labels = rounds(400, seed=5)
    actor = boosted(warm_every=9, warm_trees=2)
    pairs = []
    for row, label in zip(x, labels.tolist(), strict=True):
        d = actor.act(row)
        f = Feedback(loss=float(d.action != label))
        actor.learn(d, f)
        pairs.append((d, f))
    one, batched = boosted(warm_every=9, warm_trees=2), boosted(warm_every=9, warm_trees=2)
    for d, f in pairs:
        one.learn(d, f)
    for start in range(0, len(pairs), size):
        part = pairs[start : start + size]
        assert batched.learn_batch([d for d, _ in part], [f for _, f in part]) == [True] * len(part)
    assert_same_state(one, batched)
    assert batched._warm_added > 0


def test_full_information_grows_on_a_row_per_action() -> None:
    x, labels = rounds(80)
    learner = boosted(warm_every=10, warm_trees=2, first_fit=40)
    learner = build_learner({**learner.config(), "estimator": "full"})
    assert isinstance(learner, BoostedBandit)
    sizes: list[int] = []
    real = learner._grow

    def counting() -> None:
        sizes.append(learner._rows_total - learner._through_rows)
        real()

    learner._grow = counting  # type: ignore[method-assign]
    for row, label in zip(x, labels.tolist(), strict=True):
        learner.learn(learner.act(row), Feedback(label=float(label)))
    assert sizes[:2] == [10 * K, 20 * K]


@pytest.mark.parametrize(
    "options,match",
    [({"warm_every": 0}, "options.warm_every"), ({"warm_trees": 0}, "options.warm_trees")],
)
def test_bad_warm_options_are_refused_naming_the_field(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_learner({"kind": "boosted", "n_features": D, "n_actions": K, "options": options})


def test_no_tree_is_grown_on_the_base_alone_before_the_first_fit() -> None:
    """With ``base_first_fit`` the base decides alone until ``first_fit``: warm starts
    grow trees on the first fitted ensemble, not on the base before it."""
    x, labels = rounds(120)
    played = play(boosted(base_first_fit=10, warm_every=5, warm_trees=2), x, labels)
    trees = [n for _, n, _ in played]
    assert all(n == 0 for n in trees[:39])  # base fits at rounds 10, 20 and 40 (growth 2)
    assert trees[39] == 10  # the trees' first fit, at first_fit
    assert max(trees[40:]) > 10  # then warm starts grow it
