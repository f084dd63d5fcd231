"""The ``boosted`` kind: its frozen trees, refit schedule, uncertainty and checkpoints."""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest

from banditree.features import FeatureEncoder, FeatureSchema
from banditree.learners import Feedback, InvalidInput, build_learner
from banditree.learners.boosted import BoostedBandit
from banditree.learners.boosted.codes import CategoryCodes
from banditree.learners.boosted.learner import RESTART_MIN_ROUNDS
from banditree.models.boosted.fit import (
    MIN_HOLDOUT_ROWS,
    BoostingSettings,
    augment,
    fit_ensemble,
    held_out_trees,
)
from banditree.models.boosted.frozen import FrozenBoostedEnsemble, leaf_positions
from banditree.models.boosted.linear import fit_linear_base
from banditree.models.boosted.model_text import padded_trees
from banditree.models.boosted.stats import leaf_uncertainty
from banditree.persistence import dumps, loads
from tests.learners.test_contract import assert_same_state

D, K = 4, 3


def rounds(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D))
    labels = (x[:, 0] * x[:, 1] > 0).astype(int) + (x[:, 2] > 1.0).astype(int)
    return x, labels


def boosted(seed: int = 0, **options: Any) -> BoostedBandit:
    learner = build_learner(
        {"kind": "boosted", "n_features": D, "n_actions": K, "seed": seed, "options": options}
    )
    assert isinstance(learner, BoostedBandit)
    return learner


def play(learner: BoostedBandit, x: np.ndarray, labels: np.ndarray) -> list[dict[str, Any]]:
    out = []
    for row, label in zip(x, labels.tolist(), strict=True):
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
        out.append(d.to_dict())
    return out


def booster_params(settings: BoostingSettings) -> dict[str, Any]:
    return {
        "objective": "regression", "learning_rate": settings.learning_rate,
        "max_depth": settings.depth, "num_leaves": 1 << settings.depth,
        "min_data_in_leaf": settings.min_leaf_rows, "min_sum_hessian_in_leaf": 0.0,
        "lambda_l2": settings.l2, "max_bin": settings.max_bins, "min_data_in_bin": 1,
        "use_missing": False, "feature_pre_filter": False, "num_threads": 1,
        "deterministic": True, "force_row_wise": True, "seed": 0, "verbosity": -1,
    }  # fmt: skip


@pytest.mark.parametrize("linear", [None, 3.0])
def test_frozen_trees_predict_what_lightgbm_predicts(linear: float | None) -> None:
    x, labels = rounds(600)
    actions = np.random.default_rng(1).integers(0, K, size=600)
    rewards = (actions == labels).astype(float)
    settings = BoostingSettings(n_trees=20, depth=4, linear_l2=linear)
    frozen = fit_ensemble(x, actions, rewards, K, settings, seed=0)
    inputs = augment(x, actions, K)
    params = booster_params(settings)
    init = np.zeros(600)
    if linear is not None:
        mean, scale, w = fit_linear_base(x, actions, rewards, K, linear)
        z = np.clip((x - mean) * scale, -5.0, 5.0)
        init = w[actions, 0] + np.einsum("bd,bd->b", w[actions, 1:], z)
        params["boost_from_average"] = False
    data = lgb.Dataset(inputs, label=rewards, init_score=init if linear else None, params=params)
    booster = lgb.train(params, data, num_boost_round=20)
    expected = booster.predict(inputs) + init
    np.testing.assert_allclose(frozen.predict_rows(inputs), expected, rtol=0, atol=1e-12)
    # LightGBM's leaf indices, mapped, are the padded leaves the served walk reaches
    positions = leaf_positions(booster.dump_model(), settings.depth)
    indices = booster.predict(inputs, pred_leaf=True).astype(np.int64)
    mapped = positions[np.arange(positions.shape[0]), indices]
    np.testing.assert_array_equal(mapped, frozen.route(inputs))
    # one context, every action (the served walk): the rows of its K one-hot inputs
    for i in range(60):
        mean_k, var_k = frozen.action_scores(x[i])
        every = augment(np.repeat(x[i : i + 1], K, axis=0), np.arange(K), K)
        np.testing.assert_allclose(mean_k, frozen.predict_rows(every), rtol=0, atol=1e-12)
        assert (var_k > 0).all()
        one = [frozen.action_value(x[i], a) for a in range(K)]
        np.testing.assert_allclose(one, mean_k, rtol=0, atol=1e-12)


@pytest.mark.parametrize("depth", [1, 3, 5])
def test_the_model_text_pads_the_trees_of_the_json_dump(depth: int) -> None:
    """``padded_trees`` of ``model_to_string`` is ``from_dump`` of ``dump_model``, bit for
    bit: split features, thresholds, leaf values and LightGBM's leaf indices, shallow
    trees padded and one-leaf trees (constant rewards) included."""
    x, labels = rounds(400)
    actions = np.random.default_rng(2).integers(0, K, size=400)
    rewards = (actions == labels).astype(float)
    rewards[:200] *= 1e-3 * x[:200, 0]  # some of them small, signed and finely spread
    texts = []
    for target in (rewards, np.ones(400)):
        settings = BoostingSettings(n_trees=12, depth=depth, min_leaf_rows=3)
        params = booster_params(settings)
        inputs = augment(x, actions, K)
        booster = lgb.train(params, lgb.Dataset(inputs, label=target, params=params), 12)
        dump = booster.dump_model()
        want = FrozenBoostedEnsemble.from_dump(dump, depth, D, K)
        texts.append(booster.model_to_string())
        got = padded_trees(texts[-1], depth)
        assert got.features.tobytes() == want.features.tobytes()
        assert got.thresholds.tobytes() == want.thresholds.tobytes()
        assert got.values.tobytes() == want.values.tobytes()
        assert got.positions.tobytes() == leaf_positions(dump, depth).tobytes()
    with pytest.raises(ValueError, match="deeper than"):
        padded_trees(texts[0], depth - 1)
    with pytest.raises(ValueError, match="not a LightGBM model text"):
        padded_trees("tree\nversion=v4\n", depth)


def test_leaf_uncertainty_matches_a_loop() -> None:
    rng = np.random.default_rng(0)
    leaves = rng.integers(0, 4, size=(50, 2)) + np.array([0, 4])  # 2 trees of 4 leaves
    targets = rng.random(50)
    values = rng.normal(size=(2, 4))
    for target in ("reward", "residual"):
        got = leaf_uncertainty(
            leaves, targets, values, target=target, prior=2.0, prior_variance=0.3
        )
        for t in range(2):
            for j in range(4):
                rows = leaves[:, t] == t * 4 + j
                y = targets[rows]
                if target == "residual" and t == 1:
                    y = y - values.ravel()[leaves[rows, 0]]
                n = rows.sum()
                squares = ((y - y.mean()) ** 2).sum() if n else 0.0
                want = (squares + 2.0 * 0.3) / (n + 2.0) / (n + 2.0)
                assert got[t, j] == pytest.approx(want, rel=1e-12)


def test_refits_follow_the_schedule_and_read_the_window() -> None:
    x, labels = rounds(200)
    learner = boosted(first_fit=20, refit_growth=1.5, max_refit_interval=25, window=30)
    fitted_at = []
    for row, label in zip(x, labels.tolist(), strict=True):
        before = learner.fits
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
        if learner.fits != before:
            fitted_at.append(learner.counters["feedback"])
    assert fitted_at[:5] == [20, 30, 45, 68, 93]  # x 1.5, then at most 25 apart
    assert all(b - a <= 25 for a, b in itertools.pairwise(fitted_at))
    contexts, _, _ = learner._window.rows()
    np.testing.assert_array_equal(contexts, x[-30:])  # the 30 latest rounds, oldest first


@pytest.mark.parametrize(
    "options",
    [{"linear_base": None}, {"linear_base": 1.0}, {"blend": False}, {"compete": False}],
    ids=["no-base", "base", "select", "no-compete"],
)
def test_checkpoints_resume_identically_before_and_after_the_first_fit(
    options: dict[str, Any],
) -> None:
    x, labels = rounds(160)
    for cut in (10, 70):  # the dgt starter still deciding; the ensemble scored, deciding
        live = boosted(first_fit=40, **options)
        play(live, x[:cut], labels[:cut])
        restored = loads(dumps(live))
        assert play(live, x[cut:], labels[cut:]) == play(restored, x[cut:], labels[cut:])
        assert live.counters == restored.counters
        assert live.fits == restored.fits > 1


def test_optimism_explores_where_the_leaves_are_uncertain() -> None:
    x, labels = rounds(300)
    greedy = boosted(exploration="ucb", optimism=0.0, first_fit=50, compete=False)
    bold = boosted(exploration="ucb", optimism=5.0, first_fit=50, compete=False)
    g, b = play(greedy, x, labels), play(bold, x, labels)
    assert all(d["action"] == d["greedy_action"] for d in g[60:])
    assert sum(d["explored"] for d in b[60:]) > 10
    assert all(d["propensity"] == 1.0 for d in b[60:])


def test_explorer_mode_samples_the_pmf_by_event_id() -> None:
    x, labels = rounds(120)
    learner = boosted(exploration="explorer", first_fit=30, compete=False)
    play(learner, x, labels)
    pmf = learner.action_probabilities(x[0])
    assert pmf.sum() == pytest.approx(1.0) and (pmf > 0).all()
    d = learner.act(x[0], event_id="e1")
    assert d.propensity == pytest.approx(pmf[d.action])
    twin = loads(dumps(learner))
    assert twin.act(x[0], event_id="e1").action == d.action


def test_by_default_the_blend_is_explored_by_the_configs_explorer() -> None:
    x, labels = rounds(300)
    learner = boosted(first_fit=40)
    decisions = play(learner, x, labels)
    assert learner.ensemble_decides and learner._starter is not None
    # after the blend decides: sampled, with propensities below 1 on some rounds
    assert any(d["propensity"] < 1.0 for d in decisions[100:])
    mean, scores = learner.optimistic_scores(x[0])
    np.testing.assert_array_equal(mean, scores)  # no optimism bonus
    pmf = learner.action_probabilities(x[0])
    want = learner._explorer(mean, learner._n_learned)  # type: ignore[misc]
    np.testing.assert_allclose(pmf, want, rtol=1e-12)
    d = learner.act(x[0], event_id="e2")
    assert d.propensity == pytest.approx(pmf[d.action])


def test_compete_lets_the_lower_error_model_decide() -> None:
    x, labels = rounds(400)
    learner = boosted(first_fit=40, blend=False)
    decided_by_ensemble = []
    for row, label in zip(x, labels.tolist(), strict=True):
        decided_by_ensemble.append(learner.ensemble_decides)
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
    errors = learner._errors
    assert errors.rounds == 400 - 40  # every round after the first fit is scored
    assert learner.ensemble_decides == (errors.ensemble < errors.online)
    assert not any(decided_by_ensemble[: 40 + 30])  # scored 30 rounds before it may lead


def test_blend_weights_each_model_by_the_others_error() -> None:
    x, labels = rounds(300)
    learner = boosted(first_fit=40, exploration="ucb", optimism=0.3)  # blend is the default
    play(learner, x, labels)
    assert learner.ensemble_decides  # scored past its 30 rounds: the blend decides
    errors = learner._errors
    assert errors.online > 0 and errors.ensemble > 0
    assert learner._ensemble is not None and learner._starter is not None
    own, var = learner._ensemble.action_scores(x[0])
    online = learner._starter.reward_estimates(x[0])  # type: ignore[attr-defined]
    want = (errors.online * own + errors.ensemble * online) / (errors.online + errors.ensemble)
    mean, scores = learner.optimistic_scores(x[0])
    np.testing.assert_allclose(mean, want, rtol=1e-12)
    np.testing.assert_allclose(scores, want + 0.3 * np.sqrt(var), rtol=1e-12)


@pytest.mark.parametrize("power", [0.0, 2.0])
def test_blend_power_and_a_weighted_bonus(power: float) -> None:
    x, labels = rounds(300)
    learner = boosted(first_fit=40, blend_power=power, blend_bonus="weighted", optimism=2.0)
    play(learner, x, labels)
    errors = learner._errors
    assert errors.online != errors.ensemble
    assert learner._ensemble is not None and learner._starter is not None
    own, var = learner._ensemble.action_scores(x[0])
    online = learner._starter.reward_estimates(x[0])  # type: ignore[attr-defined]
    w = errors.online**power / (errors.online**power + errors.ensemble**power)
    want = w * own + (1.0 - w) * online
    mean, scores = learner.optimistic_scores(x[0])
    np.testing.assert_allclose(mean, want, rtol=1e-12)
    # the bonus enters as the ensemble's share of the blended mean
    np.testing.assert_allclose(scores, want + 2.0 * w * np.sqrt(var), rtol=1e-12)


def test_optimism_decays_with_the_rounds_after_the_first_fit() -> None:
    x, labels = rounds(300)
    learner = boosted(first_fit=40, optimism=2.0, optimism_decay=0.5)
    play(learner, x[:200], labels[:200])
    assert learner._ensemble is not None
    blended, _ = learner.optimistic_scores(x[0])
    _, var = learner._ensemble.action_scores(x[0])
    factor = 2.0 * (40 / 200) ** 0.5
    _, scores = learner.optimistic_scores(x[0])
    np.testing.assert_allclose(scores, blended + factor * np.sqrt(var), rtol=1e-12)
    # the kernel's decision reads the decayed factor too: its pmf is the numpy one's
    pmf = learner.action_probabilities(x[1])
    d = learner.act(x[1], event_id="e3")
    assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
    play(learner, x[200:], labels[200:])
    _, later = learner.optimistic_scores(x[0])
    mean, var = learner.optimistic_scores(x[0])[0], learner._ensemble.action_scores(x[0])[1]
    np.testing.assert_allclose(later, mean + 2.0 * (40 / 300) ** 0.5 * np.sqrt(var), rtol=1e-12)
    twin = loads(dumps(learner))
    np.testing.assert_array_equal(twin.optimistic_scores(x[0])[1], later)


def test_a_shifted_bonus_orders_the_actions_but_keeps_the_greedy_loss() -> None:
    x, labels = rounds(300)
    plain = boosted(first_fit=40, optimism=0.5)
    shifted = boosted(first_fit=40, optimism=0.5, bonus_shift=True)
    play(plain, x[:200], labels[:200])
    play(shifted, x[:200], labels[:200])
    assert shifted._ensemble is not None and shifted.ensemble_decides
    explorer = shifted._explorer
    assert explorer is not None
    moved = 0
    for row in x[200:240]:
        mean, scores = shifted.optimistic_scores(row)
        _, var = shifted._ensemble.action_scores(row)
        unshifted = mean + 0.5 * np.sqrt(var)
        # the same gaps as the plain bonus, the top at the top predicted reward
        np.testing.assert_allclose(scores - scores.max(), unshifted - unshifted.max(), atol=1e-12)
        assert scores.max() == pytest.approx(mean.max(), abs=1e-12)
        pmf = shifted.action_probabilities(row)
        np.testing.assert_allclose(pmf, explorer(scores, shifted._explore_rounds), rtol=1e-12)
        moved += not np.allclose(pmf, explorer(unshifted, shifted._explore_rounds))
    assert moved > 0  # FastCB's greedy loss is read from the predicted reward, not the bonus
    d = shifted.act(x[250], event_id="e4")
    assert d.propensity == pytest.approx(shifted.action_probabilities(x[250])[d.action])
    assert d.greedy_action == int(np.argmax(shifted.optimistic_scores(x[250])[0]))
    twin = loads(dumps(shifted))
    np.testing.assert_array_equal(
        twin.optimistic_scores(x[0])[1], shifted.optimistic_scores(x[0])[1]
    )
    assert twin.act(x[250], event_id="e4").action == d.action


def test_without_optimism_the_shift_changes_nothing() -> None:
    x, labels = rounds(300)
    a, b = boosted(first_fit=40), boosted(first_fit=40, bonus_shift=True)
    assert play(a, x, labels) == play(b, x, labels)


def test_rows_per_tree_caps_the_trees_of_a_small_window() -> None:
    x, labels = rounds(400)
    learner = boosted(first_fit=40, rows_per_tree=20.0, refit_growth=2.0)
    trees = []
    for row, label in zip(x, labels.tolist(), strict=True):
        before = learner.fits
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
        if learner.fits != before:
            assert learner._ensemble is not None
            trees.append((learner.counters["feedback"], learner._ensemble.n_trees))
    # fits at 40, 80, 160 and 320 rows: ceil(rows / 20) trees, at most n_trees (50)
    assert [n for _, n in trees] == [2, 4, 8, 16]
    assert boosted(first_fit=40).settings.n_trees == 50
    restored = loads(dumps(learner))
    assert restored._ensemble is not None and restored._ensemble.n_trees == 16


def holdout_rows(n: int, linear: bool, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Played rows whose reward is linear in the context (or an interaction), with noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D))
    actions = rng.integers(0, K, size=n)
    signal = x[:, 0] if linear else np.sign(x[:, 0] * x[:, 1]) * (actions == 1)
    rewards = 0.5 + 0.2 * signal + 0.3 * rng.normal(size=n)
    return x, actions, rewards


def test_holdout_takes_few_trees_for_a_linear_reward_and_more_for_an_interaction() -> None:
    settings = BoostingSettings(n_trees=50, depth=4, linear_l2=10.0, holdout=0.2)
    # the linear base fits a linear reward: the trees only fit noise, so few help
    linear = held_out_trees(*holdout_rows(2000, True), K, settings, seed=0)
    interaction = held_out_trees(*holdout_rows(2000, False), K, settings, seed=0)
    assert 1 <= linear < 10
    assert interaction > 2 * linear
    frozen = fit_ensemble(*holdout_rows(2000, True), K, settings, seed=0)
    assert frozen.n_trees == linear  # refitted on every row with the chosen trees
    # fewer than MIN_HOLDOUT_ROWS held out: every tree
    few = int(MIN_HOLDOUT_ROWS / 0.2) - 1
    assert held_out_trees(*holdout_rows(few, True), K, settings, seed=0) == 50
    assert fit_ensemble(*holdout_rows(few, True), K, settings, seed=0).n_trees == 50


def test_holdout_is_off_by_default_and_restores_with_its_trees() -> None:
    x, labels = rounds(600)
    assert boosted().settings.holdout is None
    learner = boosted(first_fit=300, holdout=0.25)
    assert learner.settings.holdout == 0.25
    play(learner, x, labels)
    assert learner._ensemble is not None and 1 <= learner._ensemble.n_trees <= 50
    plain = boosted(first_fit=300)
    play(plain, x, labels)
    assert plain._ensemble is not None and plain._ensemble.n_trees == 50
    restored = loads(dumps(learner))
    assert restored._ensemble is not None
    assert restored._ensemble.n_trees == learner._ensemble.n_trees
    np.testing.assert_array_equal(
        restored.optimistic_scores(x[0])[1], learner.optimistic_scores(x[0])[1]
    )


def test_a_penalised_intercept_keeps_a_rarely_played_action_from_extrapolating() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, D))
    actions = np.where(np.arange(400) < 397, np.arange(400) % 2, 2)
    x[397:] += 3.0  # the rare action's three rows lie far from the others
    rewards = np.where(actions < 2, (x[:, 0] > 0).astype(float), np.array(1.0))
    rewards[397:] = [1.0, 0.0, 1.0]
    *_, free = fit_linear_base(x, actions, rewards, K, 10.0)
    *_, shrunk = fit_linear_base(x, actions, rewards, K, 10.0, intercept_l2=10.0)
    # unpenalised, its intercept (its value at the rows' centre) is extrapolated above
    # its rows' mean reward; penalised, it is pulled towards 0
    assert free[2, 0] > 0.7 > 2.0 / 3.0
    assert 0.0 < shrunk[2, 0] < 0.1
    # well-sampled actions barely move
    np.testing.assert_allclose(shrunk[:2, 0], free[:2, 0], atol=0.05)
    # the same as the unpenalised fit with a negligible penalty
    *_, tiny = fit_linear_base(x, actions, rewards, K, 10.0, intercept_l2=1e-6)
    np.testing.assert_allclose(tiny, free, rtol=1e-9, atol=1e-12)
    learner = boosted(first_fit=60, linear_intercept=5.0)
    assert learner.settings.linear_intercept_l2 == 5.0
    assert boosted().settings.linear_intercept_l2 is None


def split_columns(frozen: FrozenBoostedEnsemble) -> list[set[int]]:
    """The columns each tree splits on (padding splits, threshold +inf, left out)."""
    return [
        set(f[np.isfinite(t)].tolist())
        for f, t in zip(frozen.features, frozen.thresholds, strict=True)
    ]


def test_column_share_limits_each_trees_columns_and_is_seeded() -> None:
    x, labels = rounds(800)
    actions = np.random.default_rng(1).integers(0, K, size=800)
    rewards = (actions == labels).astype(float)
    every = BoostingSettings(n_trees=20, depth=4, linear_l2=10.0)
    half = replace(every, column_share=0.3)  # 2 of the 7 columns per tree
    plain = fit_ensemble(x, actions, rewards, K, every, seed=0)
    shared = fit_ensemble(x, actions, rewards, K, half, seed=0)
    assert max(len(c) for c in split_columns(plain)) > 2
    assert all(len(c) <= 2 for c in split_columns(shared))
    assert len(set().union(*split_columns(shared))) > 2  # other columns in other trees
    again = fit_ensemble(x, actions, rewards, K, half, seed=0)
    np.testing.assert_array_equal(again.thresholds, shared.thresholds)
    np.testing.assert_array_equal(again.values, shared.values)
    other = fit_ensemble(x, actions, rewards, K, half, seed=1)
    assert not np.array_equal(other.features, shared.features)


def test_random_splits_draw_thresholds_from_the_seed() -> None:
    x, labels = rounds(800)
    actions = np.random.default_rng(1).integers(0, K, size=800)
    rewards = (actions == labels).astype(float)
    every = BoostingSettings(n_trees=10, depth=4, linear_l2=10.0)
    drawn = replace(every, random_splits=True)
    best = fit_ensemble(x, actions, rewards, K, every, seed=0)
    random = fit_ensemble(x, actions, rewards, K, drawn, seed=0)
    assert not np.array_equal(best.thresholds, random.thresholds)
    again = fit_ensemble(x, actions, rewards, K, drawn, seed=0)
    np.testing.assert_array_equal(again.thresholds, random.thresholds)
    assert not np.array_equal(
        fit_ensemble(x, actions, rewards, K, drawn, seed=1).thresholds, random.thresholds
    )
    learner = boosted(random_splits=True, column_share=0.8)
    assert learner.settings.random_splits and learner.settings.column_share == 0.8
    assert not boosted().settings.random_splits and boosted().settings.column_share == 1.0


def test_policy_value_scores_each_models_greedy_policy_by_ipw() -> None:
    from banditree.learners.boosted.compete import ProgressiveErrors

    errors = ProgressiveErrors(halflife=1e7, min_rounds=1)  # next to no decay
    # played action the online tree's greedy one (reward 1, p 0.5), then the ensemble's
    errors.update(0.5, 0.5, 1.0, greedy=(True, False), propensity=0.5)
    errors.update(0.5, 0.5, 0.0, greedy=(False, True), propensity=0.25)
    errors.update(0.5, 0.5, 1.0, greedy=(True, True), propensity=1.0)
    assert errors.online_policy_loss == pytest.approx(1.0 - (2.0 + 1.0) / 3.0, abs=1e-6)
    assert errors.ensemble_policy_loss == pytest.approx(1.0 - 1.0 / 3.0, abs=1e-6)
    twin = ProgressiveErrors(halflife=1e7, min_rounds=1)
    twin.load(errors.state())
    assert twin.state() == errors.state()

    x, labels = rounds(300)
    learner = boosted(first_fit=40, blend_score="policy_value")
    play(learner, x, labels)
    e = learner._errors
    assert e.weight > 0 and e.online_value > 0 and e.ensemble_value > 0
    assert learner._ensemble is not None and learner._starter is not None
    own, _ = learner._ensemble.action_scores(x[0])
    online = learner._starter.reward_estimates(x[0])  # type: ignore[attr-defined]
    lo, le = e.online_policy_loss, e.ensemble_policy_loss
    mean, _ = learner.optimistic_scores(x[0])
    np.testing.assert_allclose(mean, (lo * own + le * online) / (lo + le), rtol=1e-12)


def test_stacked_blend_weighs_by_the_least_squared_error_of_the_mix() -> None:
    from banditree.learners.boosted.compete import ProgressiveErrors

    rng = np.random.default_rng(0)
    errors = ProgressiveErrors(halflife=1e7, min_rounds=1)
    e_online, e_ensemble, rewards = [], [], rng.integers(2, size=3000).astype(float)
    for r in rewards:  # errors that go together: both miss by `shared`, the tree by more
        shared = 0.3 * rng.normal()
        e_online.append(shared + 0.2 * rng.normal())
        e_ensemble.append(shared + 0.05 * rng.normal())
        errors.update(r + e_online[-1], r + e_ensemble[-1], r)
    eo, ee = np.array(e_online), np.array(e_ensemble)
    grid = np.linspace(0.0, 1.0, 1001)
    best = grid[np.argmin([np.sum((w * ee + (1 - w) * eo) ** 2) for w in grid])]
    assert errors.stacked_weight == pytest.approx(best, abs=1e-3)
    assert errors.stacked_weight > 0.9  # inverse errors would give the ensemble 0.58
    assert errors.online / (errors.online + errors.ensemble) < 0.6
    twin = ProgressiveErrors(halflife=1e7, min_rounds=1)
    twin.load(errors.state())
    assert twin.stacked_weight == errors.stacked_weight
    assert ProgressiveErrors(halflife=10.0, min_rounds=1).stacked_weight == 0.5  # unscored

    x, labels = rounds(300)
    learner = boosted(first_fit=40, blend_score="stacked")
    play(learner, x, labels)
    assert learner._ensemble is not None and learner._starter is not None
    w = learner._errors.stacked_weight
    assert 0.0 <= w <= 1.0
    own, _ = learner._ensemble.action_scores(x[0])
    online = learner._starter.reward_estimates(x[0])  # type: ignore[attr-defined]
    mean, _ = learner.optimistic_scores(x[0])
    np.testing.assert_allclose(mean, w * own + (1.0 - w) * online, rtol=1e-12)
    pmf = learner.action_probabilities(x[1])  # the kernel decides with the same blend
    d = learner.act(x[1], event_id="e4")
    assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
    restored = loads(dumps(learner))
    np.testing.assert_array_equal(restored.optimistic_scores(x[0])[0], mean)


def test_restart_on_drift_forgets_the_window_when_the_tree_detects_a_change() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, D))
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    labels[1500:] = (labels[1500:] + 1) % K  # the label-to-action map shifts by one
    runs = {}
    for restart in (False, True):
        learner = boosted(restart_on_drift=restart)
        decisions = play(learner, x, labels)
        losses = [float(d["action"] != y) for d, y in zip(decisions, labels, strict=True)]
        assert learner._starter is not None
        origin = learner._starter._explore_origin  # type: ignore[attr-defined]
        assert 1500 < origin < 1700  # the tree's detector saw the change
        runs[restart] = (learner, float(np.mean(losses[1500:])))  # bandit_drift's "post"
    kept, forgot = runs[False][0], runs[True][0]
    assert len(kept._window) == 3000
    assert len(forgot._window) == 3000 - origin + 1  # from the round the change was seen
    assert forgot._ensemble is not None  # refitted after the change
    assert runs[True][1] < runs[False][1]
    twin = loads(dumps(forgot))
    assert twin.act(x[0], "e").action == forgot.act(x[0], "e").action


def test_after_a_restart_the_schedules_count_from_it_and_the_tree_decides() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, D))
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    labels[1500:] = (labels[1500:] + 1) % K
    learner = boosted()
    fitted, deciding, live, snapshot = [], [], [], None
    for t, (row, label) in enumerate(zip(x, labels.tolist(), strict=True)):
        before = learner.fits
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(d.action != label)))
        live.append(d.to_dict())
        origin = learner._origin
        if learner.fits != before and origin:
            fitted.append(learner._n_learned - origin)
        if origin:
            deciding.append((learner._n_learned - origin, learner.ensemble_decides))
            assert learner._explore_rounds == learner._n_learned - origin
        if origin and snapshot is None and learner._n_learned - origin == 1000:
            snapshot = (t + 1, loads(dumps(learner)))  # the ensemble scored, not deciding
    assert 1500 < learner._origin < 1700
    # first_fit rounds after the change, then x 1.25: not 1.25 x the rounds before it
    assert fitted[:5] == [100, 125, 157, 197, 247]
    first = next(since for since, decides in deciding if decides)
    assert first == 100 + RESTART_MIN_ROUNDS  # scored this long before it may decide
    assert snapshot is not None  # a checkpoint after the restart resumes identically
    cut, restored = snapshot
    assert restored._origin == learner._origin
    assert play(restored, x[cut:], labels[cut:]) == live[cut:]
    assert restored.ensemble_decides


def small_boosted(blend_weights: str = "global") -> BoostedBandit:
    learner = build_learner(
        {"kind": "boosted", "n_features": D, "n_actions": K, "seed": 1, "n_trees": 8,
         "options": {"blend_weights": blend_weights}}
    )  # fmt: skip
    assert isinstance(learner, BoostedBandit)
    return learner


@functools.cache
def logged_change(
    blend_weights: str,
) -> tuple[list[tuple[Any, Feedback]], list[object], BoostedBandit]:
    """A logged stream whose labels shift (the tree's detector restarts the learner),
    with entries ``learn`` refuses or learns one by one among them; the results and
    the learner of ``learn`` pair by pair."""
    x, labels = rounds(1000, seed=3)
    labels[400:] = (labels[400:] + 1) % K
    actor = small_boosted(blend_weights)
    pairs: list[tuple[Any, Feedback]] = []
    for i, (row, label) in enumerate(zip(x, labels.tolist(), strict=True)):
        d = actor.act(row)
        f = Feedback(loss=float(d.action != label))
        actor.learn(d, f)
        pairs.append((d, f))
        if i % 97 == 5:  # refused: a context that is not finite, an action out of range
            pairs.append((replace(d, context=(float("nan"),) * D), f))
            pairs.append((replace(d, action=K), f))
        if i % 211 == 7:  # learned one by one: a label, an int loss, an int propensity
            pairs += [(d, Feedback(label=float(label))), (d, Feedback(loss=1))]
            pairs.append((replace(d, propensity=1), f))
    one = small_boosted(blend_weights)
    expected: list[object] = []
    for d, f in pairs:
        try:
            expected.append(one.learn(d, f))
        except InvalidInput as err:
            expected.append(type(err))
    assert 400 < one._origin < 600 and one.fits > 10
    return pairs, expected, one


@pytest.mark.parametrize(
    ("size", "blend_weights"), [(1, "global"), (97, "global"), (512, "global"), (97, "per_action")]
)
def test_batches_learn_what_learn_learns_through_fits_and_a_change(
    size: int, blend_weights: str
) -> None:
    """``learn_batch`` of the stream: the state of ``learn`` pair by pair, through fits,
    pending fits, refused entries and the restart."""
    pairs, expected, one = logged_change(blend_weights)
    batched = small_boosted(blend_weights)
    got = []
    for start in range(0, len(pairs), size):
        part = pairs[start : start + size]
        results = batched.learn_batch([d for d, _ in part], [f for _, f in part])
        got += [r if isinstance(r, bool) else type(r) for r in results]
    assert got == expected
    assert_same_state(one, batched)
    assert batched._origin == one._origin > 0


def test_full_information_learns_a_row_per_action() -> None:
    x, labels = rounds(80)
    learner = build_learner(
        {"kind": "boosted", "n_features": D, "n_actions": K, "estimator": "full",
         "options": {"first_fit": 40}}
    )  # fmt: skip
    assert isinstance(learner, BoostedBandit)
    for row, label in zip(x, labels.tolist(), strict=True):
        learner.learn(learner.act(row), Feedback(label=float(label)))
    _, actions, rewards = learner._window.rows()
    assert len(actions) == 80 * K and learner.fits >= 2
    np.testing.assert_array_equal(actions[:K], np.arange(K))
    np.testing.assert_array_equal(rewards[:K], np.arange(K) == labels[0])
    with pytest.raises(InvalidInput, match=r"label: must be an action in \[0, 2\]"):
        learner.check(learner.act(x[0]), Feedback(label=3.0))


def test_huge_contexts_never_make_nan() -> None:
    rng = np.random.default_rng(0)
    learner = boosted(first_fit=10, linear_base=1.0, starter="uniform")
    for i in range(40):
        row = rng.normal(size=D) * (1e300 if i % 3 == 0 else 1.0)
        d = learner.act(row)
        learner.learn(d, Feedback(loss=float(i % 2)))
    tensors, _ = learner.state()
    floats = {k: v for k, v in tensors.items() if v.dtype.kind == "f"}
    assert not any(np.isnan(v).any() for v in floats.values())
    # the padding splits' thresholds are +inf (always LEFT); everything else is finite
    assert all(np.isfinite(v).all() for k, v in floats.items() if k != "ensemble.thresholds")
    mean, scores = learner.optimistic_scores(np.full(D, -1e300))
    assert np.isfinite(mean).all() and np.isfinite(scores).all()


@pytest.mark.parametrize(
    "config,match",
    [
        ({"task": "regression", "estimator": "one_point"}, "kind: boosted is for classification"),
        ({"task": "ranking", "n_actions": None}, "kind: boosted is for classification"),
        ({"options": {"window": 1}}, r"options.window: Input should be greater than or equal to 2"),
        ({"options": {"optimism": -1.0}}, "options.optimism"),
        ({"options": {"optimism_decay": 5.0}}, "options.optimism_decay"),
        ({"options": {"rows_per_tree": 0.0}}, "options.rows_per_tree"),
        ({"options": {"holdout": 0.0}}, "options.holdout"),
        ({"options": {"holdout": 0.6}}, "options.holdout"),
        ({"options": {"linear_intercept": -1.0}}, "options.linear_intercept"),
        ({"options": {"column_share": 0.0}}, "options.column_share"),
        ({"options": {"column_share": 1.5}}, "options.column_share"),
        ({"options": {"bonus_shift": "maybe"}}, "options.bonus_shift"),
        ({"options": {"trees": 3}}, "options.trees: Extra inputs are not permitted"),
        ({"mode": "apprentice"}, "mode: apprentice .* kind boosted does not take it"),
    ],
)
def test_bad_configs_are_refused_naming_the_field(config: dict[str, Any], match: str) -> None:
    base = {"kind": "boosted", "n_features": D, "n_actions": K}
    with pytest.raises(ValueError, match=match):
        build_learner({**base, **config})


def test_feedback_is_checked_before_anything_changes() -> None:
    learner = boosted(first_fit=5)
    d = learner.act(np.zeros(D))
    with pytest.raises(InvalidInput, match=r"loss: must be in \[0.0, 1.0\]"):
        learner.learn(d, Feedback(loss=2.0))
    assert learner.counters["feedback"] == 0 and len(learner._window) == 0


def test_named_features_are_encoded_for_the_ensemble() -> None:
    schema = {"colour": {"type": "categorical"}, "size": {"type": "numeric"}}
    learner = build_learner(
        {"kind": "boosted", "features": schema, "n_actions": 2, "options": {"first_fit": 20}}
    )
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(300):
        colour = str(rng.choice(["red", "blue"]))
        d = learner.act({"colour": colour, "size": float(rng.normal())})
        loss = float(d.action != (colour == "red"))
        learner.learn(d, Feedback(loss=loss))
        losses.append(loss)
    assert np.mean(losses[-100:]) < 0.1
    restored = loads(dumps(learner))
    context = {"colour": "red", "size": 0.5}
    assert restored.act(context, "e").action == learner.act(context, "e").action == 1


def test_the_starter_of_a_wide_schema_fits_ridge_as_a_dgt_model_does() -> None:
    # 10 actions x (201 + 1)^2 columns: past the ridge bound of a plain config, within
    # that of a config with a schema; the starter must resolve the schema's bound
    values = [str(v) for v in range(200)]
    schema = {
        "features": [
            {"name": "city", "type": "categorical", "values": values, "missing": False},
            {"name": "size", "type": "numeric", "missing": False},
        ]
    }
    config = {"features": schema, "n_actions": 10}
    default = build_learner({**config, "kind": "dgt"})
    boosted = build_learner(config)  # the default kind
    starter = boosted.inner._starter  # type: ignore[attr-defined]
    assert default.inner._ridge is not None  # type: ignore[attr-defined]
    assert starter._ridge is not None
    assert starter.config() == default.inner.config()  # type: ignore[attr-defined]


def test_policy_switch_hands_the_decision_to_a_confidently_better_greedy_policy() -> None:
    from banditree.learners.boosted.compete import PolicySwitch

    # the doubly robust gain, with the blend's predictions q: agreeing rounds add 0
    switch = PolicySwitch(challengers=1, halflife=1e7, min_rounds=1)
    switch.update([0.6, 0.4], 0, [0], action=0, reward=1.0, propensity=0.9)
    assert switch.gain == [0.0] and switch.chosen == -1
    # disagreeing: the challenger's action played at p 0.25 and rewarded
    switch.update([0.6, 0.4], 0, [1], action=1, reward=1.0, propensity=0.25)
    assert switch.gain[0] == pytest.approx(0.4 + (1.0 - 0.4) / 0.25 - 0.6)
    # a challenger right where the blend is wrong, round after round, takes over...
    rng = np.random.default_rng(0)
    for _ in range(200):
        played = int(rng.random() < 0.3)  # 1: the challenger's action, explored
        switch.update([0.55, 0.45], 0, [1], played, float(played == 1), 0.3 if played else 0.7)
    assert switch.z(0) > PolicySwitch.Z_ON and switch.chosen == 0
    # ... and hands it back once it is the worse one
    for _ in range(600):
        played = int(rng.random() < 0.3)
        switch.update([0.55, 0.45], 0, [1], played, float(played == 0), 0.3 if played else 0.7)
    assert switch.z(0) < PolicySwitch.Z_OFF and switch.chosen == -1
    twin = PolicySwitch(challengers=1, halflife=1e7, min_rounds=1)
    twin.load(switch.state())
    assert twin.state() == switch.state()
    with pytest.raises(ValueError):
        PolicySwitch(challengers=2, halflife=1e7, min_rounds=1).load(switch.state())

    x, labels = rounds(400)
    learner = boosted(first_fit=40, policy_switch="both")
    play(learner, x, labels)
    assert learner._switch is not None and learner._switch.rounds == 400 - 40
    for policy in ("ensemble", "tree", "blend"):  # each decides as it is named
        learner._switch.chosen = {"ensemble": 0, "tree": 1, "blend": -1}[policy]
        assert learner.deciding_policy == policy
        pmf = learner.action_probabilities(x[0])
        d = learner.act(x[0], event_id=f"switch-{policy}")
        assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
        if policy == "tree":
            tree_pmf = learner._starter.action_probabilities(x[0])  # type: ignore[union-attr]
            np.testing.assert_array_equal(pmf, tree_pmf)
        else:
            own, _ = learner._ensemble.action_scores(x[0])  # type: ignore[union-attr]
            mean, _ = learner.optimistic_scores(x[0])
            assert np.array_equal(mean, own) == (policy == "ensemble")
    learner._switch.chosen = 0
    restored = loads(dumps(learner))
    assert restored.deciding_policy == "ensemble"
    assert restored._switch is not None and restored._switch.state() == learner._switch.state()


def test_rule_switch_scores_whole_rules_and_hands_over_when_confidently_better() -> None:
    from banditree.learners.boosted.compete import PolicySwitch

    # a pmf's doubly robust gain: sum (pi - pi0) q, plus (pi - pi0)(a) (r - q(a)) / p
    switch = PolicySwitch(challengers=1, halflife=1e7, min_rounds=1)
    q = np.array([0.6, 0.4])
    same = np.array([0.9, 0.1])
    switch.update_pmfs(q, same, [same.copy()], action=1, reward=1.0, propensity=0.1)
    assert switch.gain == [0.0]  # agreeing pmfs add nothing
    switch.update_pmfs(q, same, [np.array([0.0, 1.0])], action=1, reward=1.0, propensity=0.1)
    expected = (-0.9 * 0.6 + 0.9 * 0.4) + 0.9 * (1.0 - 0.4) / 0.1
    assert switch.gain[0] == pytest.approx(expected)
    # one-hot pmfs: the greedy policies' gain of update
    greedy = PolicySwitch(challengers=1, halflife=1e7, min_rounds=1)
    greedy.update([0.6, 0.4], 0, [1], action=1, reward=1.0, propensity=0.25)
    onehot = PolicySwitch(challengers=1, halflife=1e7, min_rounds=1)
    onehot.update_pmfs(q, np.eye(2)[0], [np.eye(2)[1]], action=1, reward=1.0, propensity=0.25)
    assert onehot.gain[0] == pytest.approx(greedy.gain[0])

    with pytest.raises(ValueError, match=r"rule_switch.*policy_switch is on"):
        boosted(rule_switch="ucb", policy_switch="tree")

    x, labels = rounds(400)
    learner = boosted(first_fit=40, rule_switch="both", rule_optimism=2.0)
    assert learner._challengers == ("ucb", "tree")
    play(learner, x, labels)
    assert learner._switch is not None and learner._switch.rounds == 400 - 40
    ensemble = learner._ensemble
    assert ensemble is not None
    for policy in ("ucb", "tree", "blend"):  # each rule decides as it is named
        learner._switch.chosen = {"ucb": 0, "tree": 1, "blend": -1}[policy]
        assert learner.deciding_policy == policy
        pmf = learner.action_probabilities(x[0])
        d = learner.act(x[0], event_id=f"rule-{policy}")
        assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
        if policy == "ucb":  # TEUCB's rule: the ensemble alone, mean + 2 std, played surely
            own, var = ensemble.action_scores(x[0])
            top = int(np.argmax(own + 2.0 * np.sqrt(var)))
            assert d.action == top and d.propensity == 1.0
            np.testing.assert_array_equal(pmf, np.eye(K)[top])
        elif policy == "tree":
            tree_pmf = learner._starter.action_probabilities(x[0])  # type: ignore[union-attr]
            np.testing.assert_array_equal(pmf, tree_pmf)
        else:  # the explorer over the blend
            _, served = learner.optimistic_scores(x[0])
            explorer = learner._explorer
            assert explorer is not None
            np.testing.assert_array_equal(pmf, explorer(served, learner._explore_rounds))
    # replay and restart decide alike, the switch's state included
    learner._switch.chosen = -1
    twin = boosted(first_fit=40, rule_switch="both", rule_optimism=2.0)
    assert play(twin, x, labels) == play(
        boosted(first_fit=40, rule_switch="both", rule_optimism=2.0), x, labels
    )
    assert twin._switch is not None
    twin._switch.chosen = 0  # the served rule is state: a restored learner serves it
    restored = loads(dumps(twin))
    assert restored._switch is not None and restored.deciding_policy == "ucb"
    assert restored._switch.state() == twin._switch.state()
    more_x, more_labels = rounds(200, seed=1)
    assert play(restored, more_x, more_labels) == play(twin, more_x, more_labels)


def test_rule_switch_promotes_a_rule_only_when_its_logged_gain_is_confident() -> None:
    from banditree.learners.boosted.compete import PolicySwitch

    # rounds logged by uniform play: a rule right every time against a uniform incumbent
    # takes over; a rule as good as the incumbent never does
    k = K
    x, labels = rounds(600, seed=3)
    rng = np.random.default_rng(5)
    better = PolicySwitch(challengers=2, halflife=2_000.0, min_rounds=200)
    for label in labels.tolist():
        uniform = np.full(k, 1.0 / k)
        action = int(rng.integers(k))
        right, level = np.eye(k)[label], np.eye(k)[int(rng.integers(k))]
        better.update_pmfs(uniform, uniform, [level, right], action, float(action == label), 1 / k)
        if better.rounds < 200:
            assert better.chosen == -1  # not before min_rounds
    assert better.z(1) > PolicySwitch.Z_ON and better.chosen == 1
    assert abs(better.z(0)) < PolicySwitch.Z_ON

    learner = boosted(first_fit=40, rule_switch="ucb", rule_optimism=0.0)
    play(learner, x[:300], labels[:300])
    assert learner._switch is not None
    learner._switch.chosen = 0
    assert learner.deciding_policy == "ucb"
    d = learner.act(x[0], event_id="promoted")
    own, _ = learner._ensemble.action_scores(x[0])  # type: ignore[union-attr]
    assert d.propensity == 1.0 and d.action == int(np.argmax(own))


def test_per_action_blend_weighs_each_action_by_its_own_shrunk_errors() -> None:
    from banditree.learners.boosted.compete import ActionErrors

    errors = ActionErrors(n_actions=2, halflife=1e7, prior=1.0)
    errors.update(0, online=0.5, ensemble=0.9, reward=1.0)  # the tree better on action 0
    errors.update(1, online=0.1, ensemble=0.0, reward=0.0)  # the ensemble on action 1
    online, ensemble = errors.errors()
    # each action's sum, plus the all-action mean once, over its rounds + 1
    np.testing.assert_allclose(online, [(0.25 + 0.13) / 2, (0.01 + 0.13) / 2], rtol=1e-6)
    np.testing.assert_allclose(ensemble, [(0.01 + 0.005) / 2, (0.0 + 0.005) / 2], rtol=1e-5)

    x, labels = rounds(300)
    learner = boosted(first_fit=40, blend_weights="per_action")
    play(learner, x, labels)
    assert learner._action_errors is not None and learner._starter is not None
    assert learner._ensemble is not None
    e_online, e_ensemble = learner._action_errors.errors()
    assert e_online.shape == (K,) and not np.allclose(
        e_online / e_ensemble, e_online[0] / e_ensemble[0]
    )
    own, _ = learner._ensemble.action_scores(x[0])
    online_rewards = learner._starter.reward_estimates(x[0])  # type: ignore[attr-defined]
    mean, _ = learner.optimistic_scores(x[0])
    expected = (e_online * own + e_ensemble * online_rewards) / (e_online + e_ensemble)
    np.testing.assert_allclose(mean, expected, rtol=1e-12)
    pmf = learner.action_probabilities(x[1])
    d = learner.act(x[1], event_id="per-action")
    assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
    restored = loads(dumps(learner))
    np.testing.assert_array_equal(restored.optimistic_scores(x[0])[0], mean)


def coded_schema() -> FeatureSchema:
    return FeatureSchema.model_validate(
        {
            "features": [
                {"name": "size", "type": "numeric"},
                {"name": "level", "type": "categorical", "values": ["3", "1", "2"]},
                {"name": "city", "type": "categorical", "values": ["b", "a"], "missing": False},
                {"name": "tags", "type": "tags", "max_categories": 2},
            ]
        }
    )


def test_category_codes_read_the_declared_value_else_the_slot() -> None:
    schema = coded_schema()
    encoder = FeatureEncoder(schema)
    contexts = [
        {"size": 1.5, "level": "2", "city": "a", "tags": []},
        {"size": 0.0, "level": "3", "city": "b", "tags": []},
        {"size": 0.0, "level": "7", "city": "z", "tags": []},  # "other" in both
        {"size": 0.0, "tags": []},  # both missing
    ]
    x = encoder.encode_many(contexts)
    codes = CategoryCodes(schema)
    assert codes.names == ["level", "city"] and codes.count == 2
    wide = codes.extend(x)
    np.testing.assert_array_equal(wide[:, : x.shape[1]], x)
    # level: its declared values as numbers, other / missing one below the smallest (0);
    # city: not numbers, so its slot positions, other / missing -1
    np.testing.assert_array_equal(wide[:, -2:], [[2.0, 1.0], [3.0, 0.0], [0.0, -1.0], [0.0, -1.0]])
    np.testing.assert_array_equal(codes.extend(x[0]), wide[0])
    replaced = CategoryCodes(schema, replace=True).extend(x)
    # size and its missing column, level's missing column, the tags' columns, the codes
    assert replaced.shape == (4, 2 + 1 + 4 + 2)
    np.testing.assert_array_equal(replaced[:, -2:], wide[:, -2:])
    np.testing.assert_array_equal(replaced[:, 2], x[:, 2 + 4])  # level missing
    with pytest.raises(ValueError, match="columns"):
        codes.extend(x[:, 1:])


def ordinal_rounds(n: int, seed: int = 0) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Contexts of an ordered category of 12 values whose best action is 1 above 6."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 12, size=n)
    contexts = [{"level": str(v), "noise": float(rng.normal())} for v in levels.tolist()]
    return contexts, (levels > 6).astype(np.int64)


ORDINAL_SCHEMA = {
    "features": [
        {"name": "level", "type": "categorical", "values": [str(v) for v in range(12)]},
        {"name": "noise", "type": "numeric"},
    ]
}


@pytest.mark.parametrize("mode", ["trees", "ensemble", "all", "replace"])
def test_category_codes_let_the_trees_split_an_ordered_category(mode: str) -> None:
    config = {
        "kind": "boosted", "features": ORDINAL_SCHEMA, "n_actions": 2, "seed": 3,
        "options": {"first_fit": 50, "category_codes": mode},
    }  # fmt: skip
    learner = build_learner(config)
    plain = build_learner({**config, "options": {"first_fit": 50}})
    contexts, labels = ordinal_rounds(400)
    for context, label in zip(contexts, labels.tolist(), strict=True):
        for model in (learner, plain):
            d = model.act(context)
            model.learn(d, Feedback(loss=float(d.action != label)))
    width = FeatureSchema.model_validate(ORDINAL_SCHEMA).width  # 12 + other + missing + 2
    inner = learner.inner  # type: ignore[attr-defined]
    ensemble = inner._ensemble
    assert ensemble is not None and inner.fits > 1
    reads = ensemble.base_mean.shape[0]  # the ensemble's input width
    code = reads - 1  # the code column, after the encoded ones
    splits = {int(f) for f in ensemble.features.ravel() if f >= 0}
    assert code in splits
    assert plain.inner._ensemble.base_mean.shape[0] == width  # type: ignore[attr-defined]
    if mode in ("trees", "ensemble"):  # the online tree and the window: the schema's columns
        assert inner.n_features == width and reads == width + 1
        base_weight = ensemble.base[:, 1 + code]
        assert (np.abs(base_weight) > 0).all() == (mode == "ensemble")
        assert (np.abs(base_weight) == 0).all() == (mode == "trees")
    else:  # every row the model reads has the code
        assert inner.n_features == reads == (width + 1 if mode == "all" else 4)
    columns = learner.export_model()["columns"]
    assert len(columns) == inner.n_features
    assert (columns[-1] == "[level code]") == (mode in ("all", "replace"))
    restored = loads(dumps(learner))
    test, _ = ordinal_rounds(40, seed=1)
    assert [restored.act(c, f"e{i}").action for i, c in enumerate(test)] == [
        learner.act(c, f"e{i}").action for i, c in enumerate(test)
    ]


def test_category_codes_are_off_by_default_and_need_a_schema() -> None:
    config = {"kind": "boosted", "features": ORDINAL_SCHEMA, "n_actions": 2}
    inner = build_learner(config).inner  # type: ignore[attr-defined]
    assert inner._codes is None and inner.n_features == 16
    numbers = boosted(category_codes="replace")  # float contexts: no schema, no codes
    assert numbers._codes is None and numbers.n_features == D
    replaced = build_learner({**config, "options": {"category_codes": "replace"}})
    assert replaced.inner.n_features == 4  # type: ignore[attr-defined]


def test_base_first_fit_serves_the_linear_base_alone_until_the_trees_first_fit() -> None:
    with pytest.raises(ValueError, match=r"base_first_fit.*below first_fit \(60\)"):
        boosted(first_fit=60, base_first_fit=60)
    x, labels = rounds(200)
    learner = boosted(first_fit=60, base_first_fit=20)
    plain = boosted(first_fit=60)
    seen: list[tuple[int, int, int]] = []  # (round, trees, next fit) after each fit
    plain_rounds: list[int] = []
    for t, (row, label) in enumerate(zip(x, labels.tolist(), strict=True), start=1):
        d = learner.act(row)
        if t > 50:  # the base, scored on 30 rounds, is in the blend: act reads it
            assert learner.ensemble_decides
            pmf = learner.action_probabilities(row)
            assert d.propensity == pytest.approx(pmf[d.action], rel=1e-9)
        fits, plain_fits = learner.fits, plain.fits
        learner.learn(d, Feedback(loss=float(d.action != label)))
        plain.learn(plain.act(row), Feedback(loss=float(label != 0)))
        if plain.fits > plain_fits:
            plain_rounds.append(t)
        if learner.fits > fits:
            ensemble = learner._ensemble
            assert ensemble is not None
            seen.append((t, ensemble.n_trees, learner._next_fit))
            if ensemble.n_trees == 0:  # the ridge fit of the window's rows, per action
                contexts, actions, rewards = learner._window.rows()
                mean, scale, weights = fit_linear_base(contexts, actions, rewards, K, 10.0)
                np.testing.assert_array_equal(ensemble.base, weights)
                np.testing.assert_array_equal(ensemble.base_mean, mean)
                np.testing.assert_array_equal(ensemble.base_scale, scale)
    # base fits on the refit schedule, cut at first_fit; the trees from there as without it
    assert [s[:2] for s in seen[:6]] == [(20, 0), (25, 0), (32, 0), (40, 0), (50, 0), (60, 50)]
    assert [s[0] for s in seen if s[1] > 0] == plain_rounds == [60, 75, 94, 118, 148, 185]
    # the kernel and the numpy reference decide alike on a base of no trees
    early = boosted(first_fit=60, base_first_fit=20)
    play(early, x[:55], labels[:55])
    assert early._ensemble is not None and early._ensemble.n_trees == 0
    assert early.ensemble_decides
    reference = loads(dumps(early))
    reference._kernel = None
    for i, row in enumerate(x[55:80]):
        a, b = early.act(row, event_id=f"k{i}"), reference.act(row, event_id=f"k{i}")
        assert (a.action, a.greedy_action) == (b.action, b.greedy_action)
        assert a.propensity == pytest.approx(b.propensity, rel=1e-12)
    # replay and restart decide alike: a checkpoint holds the base as an ensemble of no trees
    live = play(boosted(first_fit=60, base_first_fit=20), x, labels)
    assert play(boosted(first_fit=60, base_first_fit=20), x, labels) == live
    cut = 45
    head = boosted(first_fit=60, base_first_fit=20)
    play(head, x[:cut], labels[:cut])
    restored = loads(dumps(head))
    assert restored._ensemble is not None and restored._ensemble.n_trees == 0
    assert play(restored, x[cut:], labels[cut:]) == live[cut:]
    # learn_batch learns what learn learns, through the base fits and the first trees
    pairs = []
    actor = boosted(first_fit=60, base_first_fit=20)
    for row, label in zip(x[:150], labels[:150].tolist(), strict=True):
        d = actor.act(row)
        f = Feedback(loss=float(d.action != label))
        actor.learn(d, f)
        pairs.append((d, f))
    one, batched = (boosted(first_fit=60, base_first_fit=20) for _ in range(2))
    for d, f in pairs:
        one.learn(d, f)
    for start in range(0, len(pairs), 7):
        part = pairs[start : start + 7]
        batched.learn_batch([d for d, _ in part], [f for _, f in part])
    assert batched.fits == one.fits > 5
    assert_same_state(one, batched)
