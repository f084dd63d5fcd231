"""The ``boosted`` kind: a bandit on a LightGBM ensemble refitted from recent rounds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from banditree.explore import make_explorer
from banditree.features import FeatureSchema
from banditree.learners.base import Learner
from banditree.learners.boosted.codes import CategoryCodes
from banditree.learners.boosted.learner import BoostedBandit
from banditree.learners.boosted_options import BoostedOptions
from banditree.learners.config import LearnerConfig
from banditree.models.boosted.fit import BoostingSettings

__all__ = ["BoostedBandit", "BoostedOptions", "build_boosted", "stage_codes"]


def stage_codes(c: LearnerConfig, schema: FeatureSchema) -> CategoryCodes | None:
    """The code columns the feature stage appends to every encoded row of a boosted
    config (its ``category_codes: all``), or None."""
    options = BoostedOptions.model_validate(c.options)
    if options.category_codes not in ("all", "replace"):
        return None
    codes = CategoryCodes(schema, replace=options.category_codes == "replace")
    return codes if codes.count else None


def build_boosted(
    c: LearnerConfig,
    build: Callable[[LearnerConfig], Learner],
    schema: FeatureSchema | None = None,
) -> BoostedBandit:
    """The :class:`BoostedBandit` of config ``c``; ``build`` builds its ``dgt`` starter.

    ``schema``: the features the contexts were encoded by (the learner behind a schema's
    encoder gets a config without it); ``category_codes`` reads its categorical ones.
    """
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
    schema = schema if schema is not None else c.feature_schema
    codes = None
    if options.category_codes in ("trees", "ensemble") and schema is not None:
        codes = CategoryCodes(schema)
        if not codes.count:
            codes = None
        elif options.category_codes == "trees":  # the base reads the schema's columns
            settings = replace(settings, base_columns=c.n_features)
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
        codes=codes,
        config=c.model_dump(mode="json"),
    )
