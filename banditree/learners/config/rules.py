"""The rules across fields of a learner configuration (one field's bounds sit on the field).

:func:`check` runs on a :class:`~banditree.learners.config.LearnerConfig` and on the
flat HTTP body that composes one (``service.domain.schemas.ModelCreate``), so both refuse a
body with the same message.
"""

from __future__ import annotations

from pydantic import ValidationError

from banditree.learners.boosted_options import BoostedOptions
from banditree.learners.config import defaults
from banditree.learners.config.defaults import Fields
from banditree.learners.ranking_options import RankingOptions
from banditree.models.limits import MAX_PARAMETERS


def check(config: Fields) -> None:
    """Apply the apprentice's reward link; raise ``ValueError`` naming a broken rule."""
    if config.task == "ranking":
        if config.kind == "boosted":
            raise ValueError(
                "kind: boosted is for classification; a ranking model (task ranking) ranks "
                "with its own tree and takes no kind"
            )
        ranking_options(config)
        return
    if config.mode == "apprentice" and "reward_link" not in config.model_fields_set:
        config.reward_link = defaults.apprentice_reward_link(config)
    if config.mode == "apprentice" and config.kind != defaults.apprentice_kind(config):
        config.kind = defaults.apprentice_kind(config)  # the default's kind refuses it
        if "n_trees" not in config.model_fields_set:
            config.n_trees = defaults.default_n_trees(config.task, config.kind)
    if config.features == defaults.INFER and config.mode == "apprentice":
        raise ValueError("mode apprentice needs n_features (it does not take features yet)")
    if config.features is not None and config.mode == "apprentice":
        raise ValueError("mode apprentice does not take features yet")
    if any(not 1 <= w <= 4096 for w in config.hidden):
        raise ValueError("hidden widths must each be in [1, 4096]")
    if config.kind == "boosted":
        boosted_options(config)
    if config.task == "classification":
        _check_classification(config)
    elif config.estimator == "bandit":
        raise ValueError("estimator bandit is for classification; use one_point or two_point")
    elif config.loss_matrix is not None:
        raise ValueError("loss_matrix is for classification")
    if config.mode == "apprentice" and (config.task != "classification" or config.kind == "random"):
        raise ValueError("mode apprentice needs a classification model that learns (not random)")
    if (config.loss_min is None) != (config.loss_max is None):
        raise ValueError("give both loss_min and loss_max, or neither")
    if config.loss_min is not None and config.loss_max is not None:
        if config.loss_min > config.loss_max:
            raise ValueError("loss_min must be <= loss_max")
    n = defaults.parameter_count(config)
    if n > MAX_PARAMETERS:
        raise ValueError(
            f"this configuration needs {n} parameters, more than the limit {MAX_PARAMETERS}"
        )


def _check_classification(config: Fields) -> None:
    if config.n_actions is None:
        raise ValueError("n_actions is required for classification")
    if config.estimator in ("one_point", "two_point"):
        raise ValueError("estimator one_point/two_point is for regression")
    if config.explorer == "epsilon_greedy" and (config.explorer_parameter or 0.0) > 1.0:
        raise ValueError("explorer_parameter (epsilon) must be in [0, 1]")
    if config.loss_matrix is not None:
        k = config.n_actions
        if len(config.loss_matrix) != k or any(len(row) != k for row in config.loss_matrix):
            raise ValueError(f"loss_matrix must be n_actions x n_actions ({k} x {k})")
        if not all(0.0 <= v <= 1.0 for row in config.loss_matrix for v in row):
            raise ValueError("loss_matrix values must lie in [0, 1]")


def boosted_options(config: Fields) -> BoostedOptions:
    """The validated ``options`` of a ``kind: boosted`` model; ``ValueError`` naming a
    broken rule."""
    if config.task != "classification":
        raise ValueError(
            f"kind: boosted is for classification, not task {config.task} (for regression "
            "use dgt_forest, the default)"
        )
    if config.mode == "apprentice":
        raise ValueError(
            "mode: apprentice needs a single tree (kind dgt, the apprentice's default); "
            "kind boosted does not take it yet"
        )
    try:
        return BoostedOptions.model_validate(config.options)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"options.{where}: {first['msg']}") from None


def ranking_options(config: Fields) -> RankingOptions:
    """The validated ``options`` of a ranking model; ``ValueError`` naming a broken rule."""
    if config.n_actions is not None:
        raise ValueError(
            "n_actions is for classification: a ranking model's candidates come with each call"
        )
    try:
        options = RankingOptions.model_validate(config.options)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"options.{where}: {first['msg']}") from None
    options.check_widths()
    return options
