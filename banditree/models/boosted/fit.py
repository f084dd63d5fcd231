"""Fit a boosted regression ensemble on (context, one-hot action) -> reward with LightGBM.

LightGBM is imported here only: serving reads the frozen arrays
(:class:`~banditree.models.boosted.frozen.FrozenBoostedEnsemble`) and never the booster.
Fits are single-threaded and deterministic, so that a learner restored from a
checkpoint refits exactly the ensemble the live one fits (why LightGBM:
``docs/decisions/boosted-bandit.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.boosted.frozen import FrozenBoostedEnsemble
from banditree.models.boosted.linear import fit_linear_base
from banditree.models.boosted.model_text import padded_trees
from banditree.models.boosted.stats import LeafSums, leaf_uncertainty


@dataclass(frozen=True)
class BoostingSettings:
    """What one fit uses (the learner's ``options``, resolved)."""

    n_trees: int = 50
    depth: int = 6
    learning_rate: float = 0.3
    min_leaf_rows: int = 5
    l2: float = 1.0
    max_bins: int = 63
    target: str = "reward"
    prior: float = 0.0
    prior_variance: float = 0.25
    #: the ridge penalty of a linear base the trees are boosted from (None: no base)
    linear_l2: float | None = None
    #: the ridge penalty on the linear base's intercepts (None: unpenalised)
    linear_intercept_l2: float | None = None
    #: the share of the input columns each tree may split on (LightGBM's
    #: ``feature_fraction``, drawn per tree from the fit's seed; 1: every column)
    column_share: float = 1.0
    #: LightGBM's ``extra_trees``: each column's split threshold drawn at random (from
    #: the fit's seed), not the best of its histogram
    random_splits: bool = False
    #: the share of the latest rows held out to choose the number of trees (None: always
    #: ``n_trees``); the ensemble is then refitted on every row with that many
    holdout: float | None = None
    #: the linear base reads the first this many context columns only, the rest weigh
    #: 0 in it (None: every column)
    base_columns: int | None = None


#: a fit holds rows out (``holdout``) only when at least this many would be held out
MIN_HOLDOUT_ROWS = 50
#: the holdout's search stops this many trees after the best one
HOLDOUT_PATIENCE = 10


#: routes rows ``(B, W)`` through trees ``(features, thresholds)`` to flat leaves ``(B, T)``
#: (the compiled kernel's ``boosted_route``; :meth:`FrozenBoostedEnsemble.route` its spec)
Router = Callable[[FloatArray, IntArray, FloatArray], IntArray]


_blas: Any = None


def one_blas_thread() -> AbstractContextManager[Any]:
    """numpy's BLAS on one thread for a fit's linear algebra, as LightGBM's trees are
    (``num_threads`` 1): OpenBLAS's own threads fight the learner's thread and every other
    process for the cores, and under load its matrix products wait on them.  The limit
    is the process's while it holds."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    limit: AbstractContextManager[Any] = _blas.limit(limits=1, user_api="blas")
    return limit


def augment(contexts: FloatArray, actions: IntArray, n_actions: int) -> FloatArray:
    """``(B, d + K)``: each context followed by its action one-hot."""
    b, d = contexts.shape
    out = np.zeros((b, d + n_actions))
    out[:, :d] = contexts
    out[np.arange(b), d + actions] = 1.0
    return out


def fit_ensemble(
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    settings: BoostingSettings,
    seed: int,
    route: Router | None = None,
    sums: LeafSums | None = None,
) -> FrozenBoostedEnsemble:
    """Fit the rows and freeze the ensemble with its per-leaf uncertainty.

    Parameters
    ----------
    contexts
        ``(B, d)`` finite contexts, in the order they were learned.
    actions
        ``(B,)`` the played actions.
    rewards
        ``(B,)`` ``1 - loss``.
    n_actions
        ``K``.
    settings
        The boosting settings.
    seed
        LightGBM's seed.
    route
        Routes the fitted rows to their leaves for the leaf statistics (None: LightGBM's
        own leaf prediction; the same leaves).
    sums
        Counts the leaves' rows and squares (the kernel's; None: numpy's bincounts).

    Returns
    -------
    FrozenBoostedEnsemble
        The padded trees of depth ``settings.depth`` with leaf uncertainties.
    """
    import lightgbm as lgb  # the fitting side only

    inputs = augment(contexts, actions, n_actions)
    base, init = _base(contexts, actions, rewards, n_actions, settings, inputs)
    params = _params(settings, seed, base is not None)
    n_trees = settings.n_trees
    if settings.holdout is not None:
        n_trees = held_out_trees(contexts, actions, rewards, n_actions, settings, seed)
    data = lgb.Dataset(
        inputs, label=rewards, init_score=init if base is not None else None, params=params
    )
    # kept as trained: lgb.train would otherwise round-trip the model through its text
    # (model_to_string, model_from_string) only to free the training data, which goes
    # with the booster when this call returns; the same trees
    booster = lgb.train(params, data, num_boost_round=n_trees, keep_training_booster=True)
    # the model text, not dump_model's JSON: the same numbers, a tenth of the time
    trees = padded_trees(booster.model_to_string(), settings.depth)
    frozen = FrozenBoostedEnsemble.from_trees(
        (trees.features, trees.thresholds, trees.values), contexts.shape[1], n_actions, base
    )
    if route is not None:  # the compiled walk of the padded trees
        leaves = route(inputs, frozen.features, frozen.thresholds)
    else:
        # LightGBM routes the fitted rows (its leaf indices mapped to the padded leaves):
        # the same leaves as FrozenBoostedEnsemble.route, a fifth of a fit's time less
        predicted = booster.predict(inputs, pred_leaf=True, num_threads=1)
        indices = np.asarray(predicted, dtype=np.int64)
        positions = trees.positions
        leaves = positions[np.arange(positions.shape[0]), indices.reshape(len(rewards), -1)]
    uncertainty = leaf_uncertainty(
        leaves,
        rewards - init,
        frozen.values,
        target=settings.target,
        prior=settings.prior,
        prior_variance=settings.prior_variance,
        sums=sums,
    )
    return frozen.with_uncertainty(uncertainty)


def fit_base(
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    settings: BoostingSettings,
) -> FrozenBoostedEnsemble:
    """The linear base of the rows alone, frozen as an ensemble of no trees (no
    LightGBM: a per-action ridge solve); zeros without a base (``linear_l2`` None)."""
    inputs = augment(contexts, actions, n_actions)
    base, _ = _base(contexts, actions, rewards, n_actions, settings, inputs)
    return FrozenBoostedEnsemble.from_dump(
        {"tree_info": []}, settings.depth, contexts.shape[1], n_actions, base
    )


def _base(
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    settings: BoostingSettings,
    inputs: FloatArray,
) -> tuple[tuple[FloatArray, FloatArray, FloatArray] | None, FloatArray]:
    """The linear base of the rows (None without one) and its predictions of ``inputs``."""
    if settings.linear_l2 is None:
        return None, np.zeros(len(rewards))
    with one_blas_thread():
        m = contexts.shape[1] if settings.base_columns is None else settings.base_columns
        base = fit_linear_base(
            contexts[:, :m], actions, rewards, n_actions, settings.linear_l2,
            settings.linear_intercept_l2,
        )  # fmt: skip
        if m < contexts.shape[1]:  # the other columns weigh 0 (scale 0: z = 0)
            pad = contexts.shape[1] - m
            mean, scale, weights = base
            base = (
                np.concatenate([mean, np.zeros(pad)]),
                np.concatenate([scale, np.zeros(pad)]),
                np.concatenate([weights, np.zeros((n_actions, pad))], axis=1),
            )
        init = FrozenBoostedEnsemble.from_dump(
            {"tree_info": []}, settings.depth, contexts.shape[1], n_actions, base
        ).base_rows(inputs)
    return base, init


def _params(settings: BoostingSettings, seed: int, has_base: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "objective": "regression",
        "learning_rate": settings.learning_rate,
        "max_depth": settings.depth,
        "num_leaves": max(2, 1 << settings.depth),
        "min_data_in_leaf": settings.min_leaf_rows,
        "min_sum_hessian_in_leaf": 0.0,
        "lambda_l2": settings.l2,
        "max_bin": settings.max_bins,
        "min_data_in_bin": 1,
        "use_missing": False,
        "feature_pre_filter": False,
        "num_threads": 1,
        "deterministic": True,
        "force_row_wise": True,
        "seed": seed,
        "verbosity": -1,
    }
    if has_base:
        params["boost_from_average"] = False
    if settings.column_share < 1.0:
        params["feature_fraction"] = settings.column_share
        params["feature_fraction_seed"] = seed
    if settings.random_splits:
        params["extra_trees"] = True
        params["extra_seed"] = seed
    return params


def held_out_trees(
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    settings: BoostingSettings,
    seed: int,
) -> int:
    """The number of trees (1 to ``n_trees``) of least squared error on the latest
    ``holdout`` share of the rows, fitted (base and trees) on the rows before them.

    Every tree is fitted while the held-out error fell within :data:`HOLDOUT_PATIENCE`
    trees.  ``n_trees`` when fewer than :data:`MIN_HOLDOUT_ROWS` rows would be held out.
    """
    import lightgbm as lgb

    assert settings.holdout is not None
    n = len(rewards)
    held = int(n * settings.holdout)
    if held < MIN_HOLDOUT_ROWS or n - held < 2:
        return settings.n_trees
    cut = n - held
    inputs = augment(contexts, actions, n_actions)
    base, _ = _base(contexts[:cut], actions[:cut], rewards[:cut], n_actions, settings, inputs[:cut])
    init = np.zeros(n)
    if base is not None:
        init = FrozenBoostedEnsemble.from_dump(
            {"tree_info": []}, settings.depth, contexts.shape[1], n_actions, base
        ).base_rows(inputs)
    params = {**_params(settings, seed, base is not None), "metric": "l2"}
    with_init = base is not None
    train = lgb.Dataset(
        inputs[:cut], label=rewards[:cut], init_score=init[:cut] if with_init else None,
        params=params,
    )  # fmt: skip
    valid = lgb.Dataset(
        inputs[cut:], label=rewards[cut:], init_score=init[cut:] if with_init else None,
        reference=train, params=params,
    )  # fmt: skip
    booster = lgb.train(
        params, train, num_boost_round=settings.n_trees, valid_sets=[valid],
        callbacks=[lgb.early_stopping(HOLDOUT_PATIENCE, first_metric_only=True, verbose=False)],
    )  # fmt: skip
    return max(1, min(settings.n_trees, int(booster.best_iteration or settings.n_trees)))


def grow_ensemble(
    ensemble: FrozenBoostedEnsemble,
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    settings: BoostingSettings,
    n_new: int,
    seed: int,
    route: Router | None = None,
    sums: LeafSums | None = None,
) -> FrozenBoostedEnsemble:
    """``ensemble`` with ``n_new`` trees more, boosted on the rows from its predictions.

    A warm start: what LightGBM's ``init_model`` does with new data (the rows' initial
    scores are the old model's predictions, the new trees fit what they leave), done on
    the frozen arrays, so that no booster is kept between fits.  The linear base is kept
    as it is; the new trees' leaf uncertainties are over these rows, their targets the
    reward less the base (as :func:`fit_ensemble`'s).

    Parameters
    ----------
    ensemble
        The ensemble grown (its context width is the rows').
    contexts, actions, rewards
        ``(B, d)``, ``(B,)``, ``(B,)``: the rows the new trees fit, ``B >= 1``.
    n_actions
        ``K``.
    settings
        The boosting settings (shrinkage, leaves, bins, depth); ``n_trees`` is not read.
    n_new
        Trees to add (``>= 1``).
    seed
        LightGBM's seed.
    route, sums
        As :func:`fit_ensemble`'s.
    """
    import lightgbm as lgb  # the fitting side only

    if n_new < 1 or len(rewards) < 1:
        raise ValueError(f"a warm start needs rows and trees, got {len(rewards)} rows, {n_new}")
    inputs = augment(contexts, actions, n_actions)
    init = ensemble.predict_rows(inputs)
    params = _params(settings, seed, True)  # from the initial scores, not their average
    data = lgb.Dataset(inputs, label=rewards, init_score=init, params=params)
    booster = lgb.train(params, data, num_boost_round=n_new, keep_training_booster=True)
    trees = padded_trees(booster.model_to_string(), settings.depth)
    base = (ensemble.base_mean, ensemble.base_scale, ensemble.base)
    new = FrozenBoostedEnsemble.from_trees(
        (trees.features, trees.thresholds, trees.values), contexts.shape[1], n_actions, base
    )
    if route is not None:
        leaves = route(inputs, new.features, new.thresholds)
    else:
        leaves = new.route(inputs)
    uncertainty = leaf_uncertainty(
        leaves,
        rewards - ensemble.base_rows(inputs),
        new.values,
        target=settings.target,
        prior=settings.prior,
        prior_variance=settings.prior_variance,
        sums=sums,
    )
    return FrozenBoostedEnsemble(
        np.concatenate([ensemble.features, new.features]),
        np.concatenate([ensemble.thresholds, new.thresholds]),
        np.concatenate([ensemble.values, new.values]),
        np.concatenate([ensemble.uncertainty, uncertainty]),
        ensemble.n_context,
        n_actions,
        *base,
    )
