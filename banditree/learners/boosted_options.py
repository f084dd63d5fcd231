"""The ``options`` of a ``kind: boosted`` model, validated with its config.

Why each default is what it is: ``docs/decisions/boosted-bandit.md`` and
``benchmarks/results/boosted_bandit.md``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

#: rounds a fit reads when the options name none
BOOSTED_WINDOW = 20_000
#: the most rows a boosted model keeps to refit from (its checkpoint holds them)
MAX_WINDOW = 200_000


class BoostedOptions(BaseModel):
    """``options`` of a ``kind: boosted`` config; every field optional.

    The ensemble has ``n_trees`` trees of depth ``height`` (the config's fields).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    first_fit: int = Field(
        100, ge=2, le=1_000_000, description="rounds learned before the first fit"
    )
    base_first_fit: int | None = Field(
        None,
        ge=2,
        le=1_000_000,
        description=(
            "fit the linear base alone (no trees) from this many rounds on, on the refit "
            "schedule, until first_fit rounds, when the trees' first fit comes as without "
            "it; the base is scored and blended as the ensemble is (null: no fit before "
            "first_fit)"
        ),
    )
    refit_growth: float = Field(
        1.25,
        ge=1.0,
        le=10.0,
        description="refit when the rounds learned reach this factor of the last fit's",
    )
    max_refit_interval: int = Field(
        5_000, ge=1, le=10_000_000, description="the most rounds between two fits"
    )
    window: int = Field(
        BOOSTED_WINDOW,
        ge=2,
        le=MAX_WINDOW,
        description="the most recent rounds a fit reads (the bound on a fit's cost)",
    )
    warm_every: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description=(
            "between two scheduled fits, every this many learned rounds grow warm_trees "
            "new trees on the rounds the last fit has not read, boosted from the ensemble's "
            "predictions of them (a warm start; null: none, the ensemble changes at the "
            "fits only)"
        ),
    )
    warm_trees: int = Field(
        5, ge=1, le=1_000, description="trees a warm start adds (n_trees at most between fits)"
    )
    optimism: float = Field(
        0.0,
        ge=0.0,
        le=100.0,
        description="play the action of the highest predicted reward + optimism x its std",
    )
    optimism_decay: float = Field(
        0.0,
        ge=0.0,
        le=4.0,
        description=(
            "the optimism factor after first_fit rounds is optimism x (first_fit / rounds) "
            "to this power (0: constant)"
        ),
    )
    bonus_shift: bool = Field(
        False,
        description=(
            "explorer with optimism: shift the optimistic scores so that their highest is "
            "the highest predicted reward (the bonus orders the actions and sets their gaps; "
            "FastCB's greedy loss stays the predicted one, not lowered by the bonus)"
        ),
    )
    rows_per_tree: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description=(
            "a fit of B window rows grows at most ceil(B / rows_per_tree) trees, n_trees "
            "at most (null: always n_trees)"
        ),
    )
    holdout: float | None = Field(
        None,
        gt=0.0,
        le=0.5,
        description=(
            "a fit holds out this share of the latest window rows (at least 50 rows, else "
            "none), fits the rows before them and takes the number of trees, n_trees at "
            "most, of least squared error on the held-out rows; the ensemble is then fitted "
            "on every row with that many trees (null: always n_trees)"
        ),
    )
    column_share: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description=(
            "the share of the input columns (context and action one-hot) each tree may "
            "split on, drawn per tree from the seed (1: every column)"
        ),
    )
    random_splits: bool = Field(
        False,
        description=(
            "each column's split threshold drawn at random from the seed, the best of "
            "those kept (extremely randomised trees), not the best of its histogram"
        ),
    )
    category_codes: Literal["off", "trees", "ensemble", "all", "replace"] = Field(
        "off",
        description=(
            "with a schema: the ensemble's trees (trees), its trees and linear base "
            "(ensemble), or both models (all: the online tree too, and the encoded rows "
            "the model learns and exports) also read each categorical feature's code as "
            "a number beside its one-hot columns (the declared value where every one is "
            "a number, else the slot's position), so that a tree can split ordered "
            "categories by a threshold; replace: both models read the codes instead of "
            "the slot and other columns (the missing column stays)"
        ),
    )
    shrinkage: float = Field(0.3, gt=0.0, le=1.0, description="the boosting learning rate")
    min_leaf_rows: int = Field(5, ge=1, le=10_000, description="rows every leaf holds at least")
    l2: float = Field(1.0, ge=0.0, le=1e6, description="L2 penalty on leaf values")
    max_bins: int = Field(63, ge=2, le=1024, description="histogram bins per feature")
    uncertainty: Literal["reward", "residual"] = Field(
        "reward",
        description=(
            "a leaf's variance over its rows' rewards (TEUCB) or over the residual its tree fitted"
        ),
    )
    linear_base: float | None = Field(
        10.0,
        gt=0.0,
        le=1e6,
        description=(
            "the ridge penalty of a per-action linear fit of the reward the trees are "
            "boosted from (null: none, the trees fit the reward alone, as TEUCB's)"
        ),
    )
    linear_intercept: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description=(
            "the ridge penalty on each action's intercept in the linear base, shrinking "
            "it towards 0 (null: unpenalised); an action played on few rows otherwise "
            "gets an intercept extrapolated from their slopes"
        ),
    )
    prior_rows: float = Field(
        0.0, ge=0.0, le=1e6, description="pseudo-rows of variance prior_variance in every leaf"
    )
    prior_variance: float = Field(0.25, ge=0.0, le=1.0, description="variance of the pseudo-rows")
    starter: Literal["dgt", "uniform"] = Field(
        "dgt",
        description=(
            "what decides before the first fit: the online dgt tree of this config, which "
            "learns every round until then, or uniform random choices"
        ),
    )
    compete: bool = Field(
        True,
        description=(
            "starter dgt: it keeps learning after the first fit, and it or the ensemble "
            "decides, whichever has the lower progressive squared error of the played "
            "action's reward over the recent rounds (half-life compete_halflife)"
        ),
    )
    blend: bool = Field(
        True,
        description=(
            "with compete: once the ensemble is scored, decide on the mean of both models' "
            "predicted rewards, each weighted by the other's error (not one or the other)"
        ),
    )
    blend_power: float = Field(
        1.0,
        ge=0.0,
        le=16.0,
        description=(
            "blend: each model weighted by the other's error to this power (higher: "
            "the lower-error model weighs more; 0: the plain mean)"
        ),
    )
    blend_bonus: Literal["full", "weighted"] = Field(
        "full",
        description=(
            "blend: the ensemble's optimism bonus in full, or times the ensemble's weight "
            "in the blend (the share of the blended mean its uncertainty enters)"
        ),
    )
    blend_score: Literal["squared_error", "policy_value", "stacked"] = Field(
        "squared_error",
        description=(
            "blend: what weighs the models, each one's progressive squared error on the "
            "played action's reward, or one minus its greedy policy's reward estimated by "
            "inverse propensity weighting over the same rounds; stacked: the ensemble's "
            "weight of the least squared error of the blend over those rounds"
        ),
    )
    blend_weights: Literal["global", "per_action"] = Field(
        "global",
        description=(
            "blend: the models' errors over every round (one weight for all actions), or "
            "each action's own over the rounds it was played, shrunk towards the former"
        ),
    )
    policy_switch: Literal["off", "ensemble", "tree", "both"] = Field(
        "off",
        description=(
            "blend: score the greedy policy of the ensemble alone, of the tree alone or "
            "of both against the blend's on the played rounds (doubly robust, the blend "
            "the reward model); a challenger decides, explored as the blend is, while its "
            "estimated gain is confidently above 0"
        ),
    )
    rule_switch: Literal["off", "ucb", "tree", "both"] = Field(
        "off",
        description=(
            "blend: score other decision rules against the explorer over the blend on the "
            "played rounds (doubly robust over each rule's pmf, the blend the reward "
            "model): ucb, the ensemble's highest mean + rule_optimism x std at "
            "probability 1 (TEUCB's rule); tree, the online tree with its own explorer; "
            "or both. A challenger decides while its estimated gain is confidently above "
            "0 (not with policy_switch)"
        ),
    )
    rule_optimism: float = Field(
        1.0,
        ge=0.0,
        le=100.0,
        description="rule_switch ucb: the factor of the ensemble's std in its rule (TEUCB's 1)",
    )
    restart_on_drift: bool = Field(
        True,
        description=(
            "starter dgt with its drift detector: when it detects a rise of the loss, "
            "the window is emptied and the ensemble dropped, so the tree decides until a "
            "fit of first_fit rounds after the change"
        ),
    )
    compete_halflife: float = Field(
        500.0, ge=1.0, le=1e7, description="rounds over which the errors are averaged"
    )
    exploration: Literal["ucb", "explorer"] = Field(
        "explorer",
        description=(
            "ucb: play the highest optimistic score (propensity 1); explorer: the config's "
            "explorer's pmf over the optimistic scores, sampled by the event id"
        ),
    )

    @field_validator("base_first_fit")
    @classmethod
    def _before_first_fit(cls, value: int | None, info: ValidationInfo) -> int | None:
        first = info.data.get("first_fit", 100)
        if value is not None and value >= first:
            raise ValueError(f"must be below first_fit ({first})")
        return value

    @field_validator("rule_switch")
    @classmethod
    def _one_switch(cls, value: str, info: ValidationInfo) -> str:
        if value != "off" and info.data.get("policy_switch", "off") != "off":
            raise ValueError("must be off while policy_switch is on (one switch at most)")
        return value
