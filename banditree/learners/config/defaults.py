"""The default rules of :class:`~banditree.learners.config.LearnerConfig`, in one place.

A field left unset (or null) takes a value that depends on others (``task``, ``kind``,
``standardize``...): each rule is a function of the config here, and the config's
``resolved_*`` properties read them.  Why each default is what it is, with the
benchmark figures: ``docs/explanation/defaults.md``.

To give a new field a task-dependent default, add its rule here and a ``resolved_``
property that calls it (:mod:`banditree.learners.config.learner_config`).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from banditree.learners.boosted_options import BOOSTED_WINDOW

#: Largest ``n_actions (n_features + 1)^2`` (ridge state, 2 MB of float64 in every
#: checkpoint at this bound) for which ridge is the default; the largest bundled set
#: needs 42,250 (optdigits).
RIDGE_AUTO_MAX = 250_000
#: :data:`RIDGE_AUTO_MAX` of a config with ``features``: one-hot category columns make
#: contexts wide, and there the ridge carries the most (``benchmarks/quality/bandit_vs_vw.py
#: --categorical``; the figures: ``benchmarks/results/bandit_vs_vw_categorical.md``);
#: the ridge state is 20 MB at this bound
RIDGE_AUTO_MAX_FEATURES = 2_500_000
#: Trees of the default regression model, a ``dgt_forest`` whose trees' outputs are
#: averaged.
REGRESSION_FOREST_TREES = 4
#: Trees of a ``boosted`` ensemble when ``n_trees`` is unset (TEUCB's 50)
BOOSTED_TREES = 50
#: Page-Hinkley threshold of the default change detector (``drift_threshold``)
DRIFT_THRESHOLD = 30.0
#: threshold of the detector's second test, for a jump of the mean loss by more than
#: 0.25 (``drift_jump_threshold``)
DRIFT_JUMP_THRESHOLD = 10.0
#: what a change signal multiplies the tree's leaf values by (``drift_leaf_shrink``)
DRIFT_LEAF_SHRINK = 0.5
#: rounds a fresh ridge has to beat the served one after a change signal
#: (``drift_challenger``)
DRIFT_CHALLENGER = 1000
#: the smallest fraction of ``learning_rate`` the decayed step falls to
LEARNING_RATE_FLOOR = 0.1
#: Fields added since the first stored configs, with the value that keeps a stored
#: model's behaviour where their default would change it: ``learning_rate_decay`` 0 (a
#: constant step; the default decay, counted from every round already learned, would
#: cut a long-running regression model's step at once), ``bagging`` on (forests
#: bagged every task before), ``learning_rate_floor`` 0 (the step of a model with the
#: decay kept shrinking), ``drift_threshold`` 0 (no change detector), and after a
#: signal the detector's jump test off and the leaves kept (``drift_jump_threshold`` 0,
#: ``drift_leaf_shrink`` 1).
#: ``gradient_clip`` is left to its default: it changes nothing but the learning from
#: an outlying feedback, the protection every model should have.
STORED_FILLS: dict[str, Any] = {
    "learning_rate_decay": 0.0,
    "bagging": True,
    "learning_rate_floor": 0.0,
    "drift_threshold": 0.0,
    "drift_challenger": 0,
    "drift_jump_threshold": 0.0,
    "drift_leaf_shrink": 1.0,
}
#: What a warm start from a trained tree sets where the config leaves it unset: the
#: ridge fits the reward itself, not the residual of a trained tree, and the tree was
#: trained on unclipped inputs.
INITIAL_MODEL_FILLS: dict[str, Any] = {"linear_update": "adagrad", "context_clip": 0.0}
#: The model kind a warm start from a trained tree builds when the config names none.
INITIAL_MODEL_KIND = "dgt"


def ranking_fills(data: Any) -> Any:
    """A ranking model's raw config with ``n_features`` 1 when not given: it reads JSON
    features (:mod:`banditree.ranking`), not a fixed vector."""
    if isinstance(data, dict) and data.get("task") == "ranking" and "n_features" not in data:
        return {**data, "n_features": 1}
    return data


class Fields(Protocol):
    """The fields the rules read: a ``LearnerConfig``, or the HTTP body composing one.

    (A protocol, so that this module imports none of the config's: the sections take
    their computed defaults from here.)  A rule that reads a new field lists it here.
    """

    task: Literal["classification", "regression", "ranking"]
    kind: str
    n_features: int
    n_actions: int | None
    height: int | None
    hidden: list[int]
    shared_bias: bool
    n_trees: int
    bagging: bool | None
    mode: Literal["online", "apprentice"]
    features: dict[str, Any] | Literal["infer"] | None
    linear_term: bool | None
    linear_learning_rate: float | None
    linear_update: Literal["adagrad", "ridge"] | None
    explorer: Literal["epsilon_greedy", "softmax", "squarecb", "fastcb"]
    explorer_parameter: float | None
    reward_link: Literal["sigmoid", "identity"]
    estimator: Literal["bandit", "one_point", "two_point", "full"] | None
    loss_matrix: list[list[float]] | None
    max_importance_weight: float | None
    importance_aware: bool
    loss_min: float | None
    loss_max: float | None
    learning_rate: float | None
    learning_rate_decay: float | None
    learning_rate_floor: float | None
    drift_threshold: float | None
    drift_challenger: int | None
    drift_jump_threshold: float | None
    drift_leaf_shrink: float | None
    gradient_clip: float | None
    standardize: bool
    context_clip: float | None
    options: dict[str, Any]

    @property
    def model_fields_set(self) -> set[str]: ...


#: The kind a classification config gets when it names none: ``boosted``, the dgt
#: online tree blended with a LightGBM ensemble refitted from the recent rounds, which
#: leads the dgt tree on every group of the protocol's sets, the check half most
#: (``benchmarks/results/boosted_bandit.md``, "Should boosted be the default?").
#: Ranking and regression keep their own kinds (boosted refuses them); apprentice
#: configs and warm starts from a trained tree keep ``dgt``
#: (``tests/learners/test_default_kind_switch.py``).
CLASSIFICATION_KIND = "boosted"
#: The kind of a classification model created in apprentice mode that names none (the
#: apprentice wraps a single gradient-trained tree; ``boosted`` refuses the mode).
APPRENTICE_KIND = "dgt"


def default_kind(task: str) -> str:
    """The model kind a config gets when it names none: :data:`CLASSIFICATION_KIND` for
    classification, ``dgt_forest`` for regression, ``dgt`` for ranking (which builds its
    own ranking tree and reads no kind); apprentice mode: :func:`apprentice_kind`."""
    if task == "regression":
        return "dgt_forest"
    return CLASSIFICATION_KIND if task == "classification" else "dgt"


def apprentice_kind(config: Fields) -> str:
    """``kind`` of a model in apprentice mode: the kind it names, or
    :data:`APPRENTICE_KIND` where the default (resolved before the mode is read) is a
    kind that refuses the mode."""
    if "kind" in config.model_fields_set or config.kind != "boosted":
        return config.kind
    return APPRENTICE_KIND


def default_n_trees(task: str, kind: str) -> int:
    """``n_trees`` when unset: :data:`REGRESSION_FOREST_TREES` for a regression
    ``dgt_forest``, :data:`BOOSTED_TREES` for ``boosted``, else 10."""
    if kind == "boosted":
        return BOOSTED_TREES
    return REGRESSION_FOREST_TREES if task == "regression" and kind == "dgt_forest" else 10


def apprentice_reward_link(config: Fields) -> Literal["sigmoid", "identity"]:
    """``reward_link`` of an apprentice that names none: ``sigmoid``.

    An apprentice sees one action per context, the caller's: through the sigmoid the
    unplayed actions keep their prior, and its greedy choice agrees with the default
    far more often.
    """
    return "sigmoid" if "reward_link" not in config.model_fields_set else config.reward_link


def height(config: Fields) -> int:
    """``height``, or 6 for classification and 8 for regression."""
    if config.height is not None:
        return config.height
    return 6 if config.task == "classification" else 8


def linear_term(config: Fields) -> bool:
    """``linear_term``, or on for classification ``dgt`` / ``dgt_forest``."""
    if config.linear_term is not None:
        return config.linear_term
    return config.task == "classification" and config.kind in ("dgt", "dgt_forest")


def n_outputs(config: Fields) -> int:
    """Outputs of the model: one per action for classification, one for regression."""
    return (config.n_actions or 1) if config.task == "classification" else 1


def uses_ridge(config: Fields) -> bool:
    """Whether the bias and linear term are fitted by ridge regression (``linear_update``)."""
    if config.linear_update == "adagrad":
        return False
    fits = (
        config.task == "classification"
        and config.kind == "dgt"
        and config.shared_bias
        and linear_term(config)
        and config.reward_link == "identity"
        and config.estimator in (None, "bandit")
    )
    if config.linear_update == "ridge" or not fits:
        return fits
    # the unweighted fit the default importance weight (1) asks for, within the size
    return (
        config.max_importance_weight == 1.0
        and not config.importance_aware
        and n_outputs(config) * (config.n_features + 1) ** 2
        <= (RIDGE_AUTO_MAX if config.features is None else RIDGE_AUTO_MAX_FEATURES)
    )


def context_clip(config: Fields) -> float | None:
    """``context_clip``: null is 3 for standardised classification, else none; 0 is none."""
    if config.context_clip is None:
        return 3.0 if config.task == "classification" and config.standardize else None
    return config.context_clip or None


def linear_learning_rate(config: Fields) -> float:
    """``linear_learning_rate``, or 0.1."""
    return 0.1 if config.linear_learning_rate is None else config.linear_learning_rate


def learning_rate(config: Fields) -> float:
    """``learning_rate``, or 3e-3 (1e-2 for classification without the linear term)."""
    if config.learning_rate is not None:
        return config.learning_rate
    if config.task == "classification" and not linear_term(config):
        return 1e-2
    return 3e-3


def bagging(config: Fields) -> bool:
    """``bagging``, or on for classification and off for regression."""
    return config.task == "classification" if config.bagging is None else config.bagging


def learning_rate_decay(config: Fields) -> float | None:
    """``learning_rate_decay``: null is 20,000 rounds for regression, else off; 0 is off."""
    if config.learning_rate_decay is None:
        return 20_000.0 if config.task == "regression" else None
    return config.learning_rate_decay or None


def learning_rate_floor(config: Fields) -> float:
    """``learning_rate_floor``: null is :data:`LEARNING_RATE_FLOOR`."""
    floor = config.learning_rate_floor
    return LEARNING_RATE_FLOOR if floor is None else floor


def drift_threshold(config: Fields) -> float | None:
    """``drift_threshold``: null is :data:`DRIFT_THRESHOLD` for classification; 0 is off."""
    if config.task != "classification":
        return None
    if config.drift_threshold is None:
        return DRIFT_THRESHOLD
    return config.drift_threshold or None


def drift_challenger(config: Fields) -> int | None:
    """``drift_challenger``: null is :data:`DRIFT_CHALLENGER` where the ridge and the
    detector are on (the factory checks both); 0 is off."""
    if config.drift_challenger is None:
        return DRIFT_CHALLENGER
    return config.drift_challenger or None


def drift_jump_threshold(config: Fields) -> float | None:
    """``drift_jump_threshold``: null is :data:`DRIFT_JUMP_THRESHOLD` where the detector is
    on (the factory checks); 0 is off."""
    if config.drift_jump_threshold is None:
        return DRIFT_JUMP_THRESHOLD
    return config.drift_jump_threshold or None


def drift_leaf_shrink(config: Fields) -> float:
    """``drift_leaf_shrink``: null is :data:`DRIFT_LEAF_SHRINK`."""
    shrink = config.drift_leaf_shrink
    return DRIFT_LEAF_SHRINK if shrink is None else shrink


def gradient_clip(config: Fields) -> float | None:
    """``gradient_clip``: null is 5 for one-point regression, 50 for two-point and full
    information, off for classification; 0 is off.

    Whatever the factor, an estimate past ``OUTLIER_RATIO`` (a million) times the running
    scale, such as that of a loss of 1e100, is refused (``banditree.learners.robust``).
    A one-point estimate ``loss u / delta`` carries the loss's own size, so the clip is
    also its variance control (5). A two-point estimate is the residual itself, where a
    clip that trips is a Huber loss, biased against the rare rows with large residuals
    that come back every pass: at 20, Comp-Activ two-point (40 passes, split 0, seed
    offsets 0-11) ends at 3.255 against 3.135 unclipped, 3-13 estimates clipped a run.
    Past their first 100 estimates (the warm-up's scale is the median of a handful: pol
    clips 5 of its first 12) no estimate of the bundled regression sets' two-point runs
    passed 35 times the scale (Abalone 13, Comp-Activ 31, pol 27, house_16H 35), so 50
    leaves them unclipped and bounds a feedback short of the refusal: on Abalone
    (two-point, one loss whose estimate is clipped at 50 after 500 rounds, 300 rounds
    after it, seeds 0-29) test RMSE within 3.6 % of a model that never saw it (mean
    1.1 %; 1.9 % and 0.6 % for one ordinary feedback left out).
    """
    if config.gradient_clip is None:
        if config.task != "regression":
            return None
        return 5.0 if config.estimator in (None, "one_point") else 50.0
    return config.gradient_clip or None


def parameter_count(config: Fields) -> int:
    """Rough parameter count (used for the memory bound)."""
    if config.task == "ranking":  # bounded by its encoded widths (RankingOptions)
        return 0
    h = height(config)
    outputs = n_outputs(config)
    if config.kind == "boosted":  # the window of rounds and the frozen trees
        window = int(config.options.get("window", BOOSTED_WINDOW))
        return window * (config.n_features + 2) + config.n_trees * (1 << h) * 4
    n_int, n_leaves = (1 << h) - 1, 1 << h
    dims = [config.n_features + 1, *config.hidden, n_int]
    per_tree = (
        sum(dims[i] * dims[i + 1] for i in range(len(dims) - 1))
        + n_leaves * outputs
        + (outputs * config.n_features if linear_term(config) else 0)
    )
    if uses_ridge(config):
        per_tree += outputs * (config.n_features + 1) ** 2
    trees = config.n_trees if config.kind != "dgt" else 1
    return per_tree * trees


#: ``features`` of a model that infers its schema from its first learned context
INFER = "infer"


def feature_width(data: Any) -> Any:
    """A config body with ``features``: ``n_features`` is the encoded width (a given one
    must match); the schema is stored in its canonical form (a list, in column order).

    A body with neither ``features`` nor ``n_features`` (not a ranking model) infers its
    schema: ``features`` is :data:`INFER` and ``n_features`` 1 (a placeholder: the width
    is the inferred schema's, :mod:`banditree.learners.inferring`).
    """
    if not isinstance(data, dict):
        return data
    if data.get("features") is None and "n_features" not in data:
        if data.get("task", "classification") == "ranking":
            return data
        data = {**data, "features": INFER}
    if data.get("features") is None:
        return data
    if data["features"] == INFER:
        if data.get("n_features", 1) != 1:
            raise ValueError(
                "n_features: a model whose features are inferred takes none (the width is "
                "the inferred schema's); give n_features without features for lists of floats"
            )
        return {**data, "n_features": 1}
    if isinstance(data["features"], str):
        raise ValueError(f"features must be an object of named features or {INFER!r}")
    from banditree.features import FeatureSchema

    schema = FeatureSchema.model_validate(data["features"])
    given = data.get("n_features")
    if given is not None and given != schema.width:
        raise ValueError(
            f"n_features: the features encode to {schema.width} columns, got {given} "
            "(leave n_features out with features)"
        )
    return {**data, "features": schema.to_json(), "n_features": schema.width}
