"""The ``boosted`` kind: a bandit on a LightGBM ensemble refitted from recent rounds."""

from __future__ import annotations

from collections.abc import Callable

from banditree.explore import make_explorer
from banditree.learners.base import Learner
from banditree.learners.boosted.learner import BoostedBandit
from banditree.learners.boosted_options import BoostedOptions
from banditree.learners.config import LearnerConfig
from banditree.models.boosted.fit import BoostingSettings

__all__ = ["BoostedBandit", "BoostedOptions", "build_boosted"]


def build_boosted(c: LearnerConfig, build: Callable[[LearnerConfig], Learner]) -> BoostedBandit:
    """The :class:`BoostedBandit` of config ``c``; ``build`` builds its ``dgt`` starter."""
    options = BoostedOptions.model_validate(c.options)
    if c.task != "classification" or c.n_actions is None:
        raise ValueError("kind boosted is for classification")
    settings = BoostingSettings(
        n_trees=c.n_trees,
        depth=c.resolved_height,
        learning_rate=options.shrinkage,
        min_leaf_rows=options.min_leaf_rows,
        l2=options.l2,
        max_bins=options.max_bins,
        target=options.uncertainty,
        prior=options.prior_rows,
        prior_variance=options.prior_variance,
        linear_l2=options.linear_base,
        holdout=options.holdout,
        linear_intercept_l2=options.linear_intercept,
        column_share=options.column_share,
        random_splits=options.random_splits,
    )
    starter: Callable[[], Learner] | None = None
    if options.starter == "dgt":
        given = c.model_dump(mode="json", include=c.model_fields_set)
        given.update(kind="dgt", options={}, features=None, n_features=c.n_features)
        given.pop("n_trees", None)
        starter_config = LearnerConfig.model_validate(given)
        starter = lambda: build(starter_config)  # noqa: E731
    return BoostedBandit(
        c.n_features,
        c.n_actions,
        settings=settings,
        options=options,
        explorer=make_explorer(c.explorer, c.explorer_parameter, c.explorer_exponent),
        starter=starter,
        seed=c.seed,
        config=c.model_dump(mode="json"),
    )
