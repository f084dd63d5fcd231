"""The sections of a learner configuration: each a group of fields with their bounds.

:class:`~banditree.learners.config.LearnerConfig` is the union of these sections (one
flat record: the stored form, the HTTP body and the attributes stay flat).  The
reference page, the ``banditree simulate`` options and the HTTP body are generated from
these fields, so a new field is one ``Field(...)`` here, with a ``description``.  A
default that depends on other fields is null here and resolved in
:mod:`banditree.learners.config.defaults`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from banditree.learners.config.defaults import (
    REGRESSION_FOREST_TREES,
    RIDGE_AUTO_MAX,
    default_kind,
    default_n_trees,
    ranking_fills,
)
from banditree.models.limits import MAX_HEIGHT


class Section(BaseModel):
    """A group of config fields (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ModelSection(Section):
    """Model: the task, the model family and its shape."""

    @model_validator(mode="before")
    @classmethod
    def _ranking_width(cls, data: Any) -> Any:
        return ranking_fills(data)

    task: Literal["classification", "regression", "ranking"] = Field(
        "classification",
        description=(
            "classification (choose one of n_actions actions, loss in [0, 1]), regression "
            "(play a real value) or ranking (rank candidate actions described by features, "
            "a different set on every call; its settings in options: "
            "banditree.learners.ranking_options.RankingOptions)"
        ),
    )
    kind: str = Field(
        default_factory=lambda data: default_kind(data.get("task", "classification")),
        description=(
            "dgt, dgt_forest, tel, hinge, linear, boosted (classification: a LightGBM "
            "ensemble refitted from the recent rounds, its settings in options: "
            "banditree.learners.boosted_options.BoostedOptions, blended with the online "
            "dgt tree) or random; default boosted for classification (dgt in apprentice "
            f"mode), dgt_forest ({REGRESSION_FOREST_TREES} trees averaged) for regression"
        ),
    )
    n_features: int = Field(
        ...,
        ge=1,
        le=10_000,
        description="length of every context (required; a ranking model reads JSON features: 1)",
    )
    n_actions: int | None = Field(
        None, ge=2, le=1024, description="classification: the number of actions (required there)"
    )
    height: int | None = Field(
        None, ge=1, le=MAX_HEIGHT, description="default 6 (classification), 8 (regression)"
    )
    hidden: list[int] = Field(
        default_factory=list, max_length=4, description="linear overparameterization widths"
    )
    shared_bias: bool = Field(
        True,
        description="dgt, dgt_forest: a per-action output bias shared by all leaves of a tree",
    )
    n_trees: int = Field(
        default_factory=lambda data: default_n_trees(data.get("task", ""), data.get("kind", "")),
        ge=1,
        le=256,
        description=(
            f"forests and ensembles; default {REGRESSION_FOREST_TREES} for a regression "
            "dgt_forest, else 10"
        ),
    )
    aggregate: Literal["vote", "average"] = Field(
        "vote",
        description=(
            "classification forests: the trees vote for an action, or their outputs are "
            "averaged (a regression forest always averages)"
        ),
    )
    bagging: bool | None = Field(
        None,
        description=(
            "dgt_forest: each tree learns each round with a Poisson(1) weight (online "
            "bagging); null: on for classification, off for regression (there the trees "
            "differ by their initialisation and each learns from every round)"
        ),
    )
    seed: int = Field(
        0,
        ge=0,
        le=2**63 - 1,
        description="seeds initialisation, event ids, exploration draws and bagging",
    )
    options: dict[str, Any] = Field(default_factory=dict, description="family-specific settings")
    features: dict[str, Any] | Literal["infer"] | None = Field(
        None,
        description=(
            "named features (banditree.features.FeatureSchema): contexts are JSON objects "
            "encoded to n_features columns (derived from the schema; leave n_features out); "
            "'infer' (the default when neither features nor n_features is given): the "
            "schema is inferred from the first context learned from"
        ),
    )
    mode: Literal["online", "apprentice"] = Field(
        "online",
        description=(
            "online: the model decides; apprentice: it plays the caller's default_action "
            "(classification) or the baseline candidate (ranking) and learns from its "
            "feedback until switched online"
        ),
    )


class LinearTermSection(Section):
    """Linear term: the per-action bias and linear term beside a tree's leaves."""

    linear_term: bool | None = Field(
        None,
        description=(
            "dgt, dgt_forest: a per-action linear term on the standardised context beside "
            "the leaves (output = leaf + bias + w_a . x), it and the shared bias stepped by "
            "AdaGrad; null: on for classification, off for regression"
        ),
    )
    linear_learning_rate: float | None = Field(
        None,
        gt=0.0,
        le=10.0,
        description=(
            "dgt, dgt_forest with linear_term: AdaGrad step of the shared bias and the linear "
            "term (divided by sqrt(n_features) for the linear term); null: 0.1"
        ),
    )
    linear_update: Literal["adagrad", "ridge"] | None = Field(
        None,
        description=(
            "classification dgt (bandit estimator, identity reward link, linear_term, "
            "shared_bias): how the per-action bias "
            "and linear term learn: adagrad (a gradient step on the whole output) or ridge "
            "(exact online ridge regression of the played reward, O(d^2) a round; the tree "
            "learns the residual); null: ridge where n_actions (n_features + 1)^2 <= "
            f"{RIDGE_AUTO_MAX:,} and no initial model is given, else adagrad"
        ),
    )
    ridge_l2: float = Field(
        10.0, gt=0.0, le=1e6, description="linear_update ridge: the penalty (prior weight, rounds)"
    )
    ridge_mix_rate: float = Field(
        10.0,
        ge=0.0,
        le=1e6,
        description=(
            "linear_update ridge: while an action has fewer rounds than n_features, serve the "
            "exponential-weights mix (this rate) of its ridge fit and its mean reward, by "
            "their progressive squared errors on its rounds; 0: the ridge fit alone"
        ),
    )


class ExplorationSection(Section):
    """Exploration: how a classification learner turns predicted rewards into a choice."""

    explorer: Literal["epsilon_greedy", "softmax", "squarecb", "fastcb"] = Field(
        "fastcb",
        description=(
            "classification: fastcb (inverse-gap weighting reweighted by the greedy action's "
            "predicted loss), squarecb (inverse-gap weighting), epsilon_greedy or softmax"
        ),
    )
    explorer_parameter: float | None = Field(
        None,
        ge=0.0,
        le=1e6,
        description="epsilon / temperature / gamma scale (null: 0.3 / 0.1 / 50, fastcb 50)",
    )
    explorer_exponent: float | None = Field(
        None,
        ge=0.0,
        le=2.0,
        description=(
            "schedule: epsilon and temperature decay as (1 + t)^-exponent, squarecb's and "
            "fastcb's gamma grows as t^exponent, t = rounds learned (null: 0 / 0 / 0.5)"
        ),
    )
    reward_link: Literal["sigmoid", "identity"] = Field(
        "identity",
        description=(
            "classification: predicted reward = sigmoid(output) (the paper) or the output; "
            "an apprentice that names none gets sigmoid"
        ),
    )
