"""Learner configuration: one validated record that builds any learner.

The bounds keep one configuration from exhausting memory; the service uses this
same model for the body of ``PUT /v1/models/{name}``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from banditree.models.dgt.tree_ops import MAX_HEIGHT
from banditree.models.spec import MAX_PARAMETERS

#: Largest number of parameters one learner may hold.
#: Largest ``n_actions (n_features + 1)^2`` (ridge state, 2 MB of float64 in every
#: checkpoint at this bound) for which ridge is the default; the largest bundled set
#: needs 42,250 (optdigits).
RIDGE_AUTO_MAX = 250_000
#: Trees of the default regression model, a ``dgt_forest`` whose trees' outputs are
#: averaged (``benchmarks/bandit_regression.py``, Comp-Activ two-point over the paper's
#: splits 0-2 and four seed offsets: 3.02 against a single tree's 3.53, whose final
#: RMSE swings with the few extreme rows it routes).
REGRESSION_FOREST_TREES = 4


def default_kind(task: str) -> str:
    """The model kind a config gets when it names none: ``dgt``, or ``dgt_forest`` for regression."""
    return "dgt_forest" if task == "regression" else "dgt"


def default_n_trees(task: str, kind: str) -> int:
    """``n_trees`` when unset: :data:`REGRESSION_FOREST_TREES` for a regression ``dgt_forest``."""
    return REGRESSION_FOREST_TREES if task == "regression" and kind == "dgt_forest" else 10


class LearnerConfig(BaseModel):
    """Everything needed to build (and rebuild) a learner.

    Defaults are the paper's bandit defaults except where ``benchmarks/bandit_vs_vw.py``
    measured better ones (``benchmarks/bandit_regression.py`` for regression):
    FastCB exploration (SquareCB's inverse-gap weighting with ``gamma_t = 50 t^0.5``,
    divided by the greedy action's predicted loss; not epsilon-greedy 0.3, nor VW's
    SquareCB at scale 10), the output read as the predicted reward (``reward_link``
    identity, not sigmoid), least squares on the played action's reward
    (``max_importance_weight`` 1, the regression SquareCB assumes, not eq. 8's ``1/p``),
    and, for classification trees, a per-action bias and a per-action linear term on the
    context beside the leaves, fitted by online ridge regression of the played reward
    (penalty 10; while an action has fewer rounds than features, mixed with its mean
    reward by progressive validation pooled over the actions; AdaGrad at 0.1 where the
    ridge state would be too large), the tree learning the residual by RMSprop at 3e-3
    (not 1e-3), on contexts standardised and clipped to [-3, 3]; regression is a
    ``dgt_forest`` of :data:`REGRESSION_FOREST_TREES` trees whose outputs are averaged,
    each learning every round (no bagging; one tree's final error swings with the few
    extreme rows it routes), with the shared bias only, at 3e-3 decayed as
    ``1 / (1 + t / 20,000)``, unclipped.  ``kind`` and ``n_trees`` therefore default by
    ``task``; a config that names them keeps them.
    """

    # NaN and infinities are refused in every float field (a NaN target_offset answered
    # null for ever)
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    task: Literal["classification", "regression"] = "classification"
    kind: str = Field(
        default_factory=lambda data: default_kind(data.get("task", "classification")),
        description=(
            "dgt, dgt_forest, tel, hinge, linear or random; default dgt for classification, "
            f"dgt_forest ({REGRESSION_FOREST_TREES} trees averaged) for regression"
        ),
    )
    n_features: int = Field(..., ge=1, le=10_000)
    n_actions: int | None = Field(None, ge=2, le=1024, description="classification only")
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
    context_clip: float | None = Field(
        None,
        ge=0.0,
        le=1e6,
        description=(
            "clip standardised contexts to [-c, c] everywhere (decisions and learning), so a "
            "rare extreme value cannot swing the linear term; null: 3 for classification "
            "with standardize and no initial model, else off; 0: off"
        ),
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
    aggregate: Literal["vote", "average"] = "vote"
    bagging: bool | None = Field(
        None,
        description=(
            "dgt_forest: each tree learns each round with a Poisson(1) weight (online "
            "bagging); null: on for classification, off for regression (there the trees "
            "differ by their initialisation and each learns from every round)"
        ),
    )
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
        description="classification: predicted reward = sigmoid(output) (the paper) or the output",
    )
    estimator: Literal["bandit", "one_point", "two_point", "full"] | None = Field(
        None,
        description="classification: bandit (eq. 8); regression: one_point (default) or two_point; full = labels",
    )
    delta: float = Field(0.5, gt=0.0, le=1e6, description="perturbation of one/two-point feedback")
    regression_loss: Literal["squared", "huber"] = "squared"
    huber_delta: float = Field(
        1.0, gt=0.0, le=1e6, description="Huber threshold of the full estimator, target units"
    )
    loss_matrix: list[list[float]] | None = Field(
        None,
        description=(
            "classification, full estimator: K x K losses in [0, 1], row = label (default 0/1 loss)"
        ),
    )
    max_importance_weight: float | None = Field(
        1.0,
        ge=1.0,
        le=1e6,
        description=(
            "classification: cap on eq. 8's importance weight 1/p (truncated importance "
            "sampling); 1 = none: least squares on the played action's reward, the "
            "regression SquareCB assumes; null = the paper's exact eq. 8"
        ),
    )
    importance_aware: bool = Field(
        False,
        description=(
            "classification: weight = cap (1 - exp(-(1/p) / cap)) with cap = "
            "max_importance_weight (the importance-weight-aware update) instead of min(1/p, cap)"
        ),
    )
    learning_rate: float | None = Field(
        None,
        gt=0.0,
        le=10.0,
        description=(
            "RMSprop step of the model (the tree); null: 3e-3, or 1e-2 for classification "
            "without the linear term, as measured"
        ),
    )
    learning_rate_decay: float | None = Field(
        None,
        ge=0.0,
        le=1e12,
        description=(
            "rounds T of the step's decay: the step is learning_rate / (1 + t / T), t = rounds "
            "learned; null: 20,000 for regression, off for classification; 0: off (a constant "
            "step, for targets that drift)"
        ),
    )
    accumulate: int = Field(4, ge=1, le=1024)
    l1: float = Field(0.0, ge=0.0, le=1.0)
    l2: float = Field(0.0, ge=0.0, le=1.0)
    standardize: bool = True
    loss_min: float | None = None
    loss_max: float | None = None
    target_offset: float = 0.0
    target_scale: float = Field(1.0, gt=0.0)
    seed: int = Field(0, ge=0, le=2**63 - 1)
    options: dict[str, Any] = Field(default_factory=dict, description="family-specific settings")
    mode: Literal["online", "apprentice"] = Field(
        "online",
        description=(
            "online: the model decides; apprentice: it plays the caller's default_action "
            "and learns from its feedback until switched online (classification)"
        ),
    )

    @model_validator(mode="after")
    def _check(self) -> LearnerConfig:
        if self.mode == "apprentice" and "reward_link" not in self.model_fields_set:
            # an apprentice sees one action per context, the caller's: through the sigmoid the
            # unplayed actions keep their prior, and its greedy choice agrees with the default
            # far more often (breast_cancer, linear rule: 0.95 against 0.80 with identity)
            self.reward_link = "sigmoid"
        if any(not 1 <= w <= 4096 for w in self.hidden):
            raise ValueError("hidden widths must each be in [1, 4096]")
        if self.task == "classification":
            if self.n_actions is None:
                raise ValueError("n_actions is required for classification")
            if self.estimator in ("one_point", "two_point"):
                raise ValueError("estimator one_point/two_point is for regression")
            if self.explorer == "epsilon_greedy" and (self.explorer_parameter or 0.0) > 1.0:
                raise ValueError("explorer_parameter (epsilon) must be in [0, 1]")
            if self.loss_matrix is not None:
                k = self.n_actions
                if len(self.loss_matrix) != k or any(len(row) != k for row in self.loss_matrix):
                    raise ValueError(f"loss_matrix must be n_actions x n_actions ({k} x {k})")
                if not all(0.0 <= v <= 1.0 for row in self.loss_matrix for v in row):
                    raise ValueError("loss_matrix values must lie in [0, 1]")
        elif self.estimator == "bandit":
            raise ValueError("estimator bandit is for classification; use one_point or two_point")
        elif self.loss_matrix is not None:
            raise ValueError("loss_matrix is for classification")
        if self.mode == "apprentice" and (self.task != "classification" or self.kind == "random"):
            raise ValueError(
                "mode apprentice needs a classification model that learns (not random)"
            )
        if (self.loss_min is None) != (self.loss_max is None):
            raise ValueError("give both loss_min and loss_max, or neither")
        if (
            self.loss_min is not None
            and self.loss_max is not None
            and self.loss_min > self.loss_max
        ):
            raise ValueError("loss_min must be <= loss_max")
        n = self.parameter_count()
        if n > MAX_PARAMETERS:
            raise ValueError(
                f"this configuration needs {n} parameters, more than the limit {MAX_PARAMETERS}"
            )
        return self

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> LearnerConfig:
        """A config persisted by an earlier version (a model record, a checkpoint's meta).

        A stored config holds every field of its version, null for a default.  Fields
        added since are filled with the value that keeps the stored model's behaviour
        where their default would change it: ``learning_rate_decay`` 0 (a constant
        step; the default decay, counted from every round already learned, would cut a
        long-running regression model's step at once) and ``bagging`` on (forests
        bagged every task before).
        """
        data = dict(data)
        data.setdefault("learning_rate_decay", 0.0)
        data.setdefault("bagging", True)
        return cls.model_validate(data)

    @property
    def resolved_height(self) -> int:
        return (
            self.height if self.height is not None else (6 if self.task == "classification" else 8)
        )

    @property
    def resolved_linear_term(self) -> bool:
        """``linear_term``, or on for classification ``dgt`` / ``dgt_forest``."""
        if self.linear_term is not None:
            return self.linear_term
        return self.task == "classification" and self.kind in ("dgt", "dgt_forest")

    @property
    def uses_ridge(self) -> bool:
        """Whether the bias and linear term are fitted by ridge regression (``linear_update``)."""
        if self.linear_update == "adagrad":
            return False
        fits = (
            self.task == "classification"
            and self.kind == "dgt"
            and self.shared_bias
            and self.resolved_linear_term
            and self.reward_link == "identity"
            and self.estimator in (None, "bandit")
        )
        if self.linear_update == "ridge" or not fits:
            return fits
        # the unweighted fit the default importance weight (1) asks for, within the size
        return (
            self.max_importance_weight == 1.0
            and not self.importance_aware
            and self.n_outputs * (self.n_features + 1) ** 2 <= RIDGE_AUTO_MAX
        )

    def for_initial_model(self) -> LearnerConfig:
        """This configuration as a warm start from a trained tree builds it.

        A trained tree warm-starts a ``dgt``: a config that names no ``kind`` (the
        regression default is a forest) gets ``dgt``.  The ridge fits the reward itself,
        not the residual of a trained tree, and the tree was trained on unclipped inputs:
        unless they are set, ``linear_update`` becomes ``adagrad`` and ``context_clip`` 0
        (off).
        """
        config = self
        if "kind" not in self.model_fields_set:
            given = self.model_dump(include=self.model_fields_set)
            config = LearnerConfig.model_validate({**given, "kind": "dgt"})
        update = {"linear_update": "adagrad", "context_clip": 0.0}
        return config.model_copy(
            update={k: v for k, v in update.items() if getattr(config, k) is None}
        )

    @property
    def resolved_context_clip(self) -> float | None:
        """``context_clip``: null is 3 for standardised classification, else none; 0 is none."""
        if self.context_clip is None:
            return 3.0 if self.task == "classification" and self.standardize else None
        return self.context_clip or None

    @property
    def resolved_linear_learning_rate(self) -> float:
        return 0.1 if self.linear_learning_rate is None else self.linear_learning_rate

    @property
    def resolved_learning_rate(self) -> float:
        """``learning_rate``, or the measured default.

        3e-3 for a tree beside the linear term (``benchmarks/bandit_vs_vw.py``: the linear
        term carries the first rounds, a slower tree refines it) and for regression
        (two-point, 10 passes, split 0: Abalone RMSE 2.29 against 2.67 at 1e-2,
        Comp-Activ 4.09 against 5.40); 1e-2 for classification without the linear term
        (one pass over PenDigits / SatImage: progressive accuracy 0.61 / 0.62 against
        0.44 / 0.58 at 3e-3).
        """
        if self.learning_rate is not None:
            return self.learning_rate
        if self.task == "classification" and not self.resolved_linear_term:
            return 1e-2
        return 3e-3

    @property
    def resolved_bagging(self) -> bool:
        """``bagging``, or on for classification and off for regression.

        Regression, two-point, 40 passes, a 4-tree averaged forest: Comp-Activ 2.95 / 2.91
        on splits 0 / 1 without bagging against 3.16 / 3.01 with it: the two-point
        gradient is the same for every tree, so bagging only discards a third of each
        tree's rounds.
        """
        return self.task == "classification" if self.bagging is None else self.bagging

    @property
    def resolved_learning_rate_decay(self) -> float | None:
        """``learning_rate_decay``: null is 20,000 rounds for regression, else off; 0 is off.

        Regression, two-point, 40 passes, split 0 (``benchmarks/bandit_regression.py``):
        final test RMSE Abalone 2.20, Comp-Activ 3.08, pol 7.43, house_16H 41,280 against
        2.30, 3.64, 9.38 and 48,990 at a constant step, whose final model swings with its
        last few hundred updates.
        """
        if self.learning_rate_decay is None:
            return 20_000.0 if self.task == "regression" else None
        return self.learning_rate_decay or None

    @property
    def n_outputs(self) -> int:
        return (self.n_actions or 1) if self.task == "classification" else 1

    def parameter_count(self) -> int:
        """Rough parameter count (used for the memory bound)."""
        h = self.resolved_height
        n_int, n_leaves = (1 << h) - 1, 1 << h
        dims = [self.n_features + 1, *self.hidden, n_int]
        per_tree = (
            sum(dims[i] * dims[i + 1] for i in range(len(dims) - 1))
            + n_leaves * self.n_outputs
            + (self.n_outputs * self.n_features if self.resolved_linear_term else 0)
        )
        if self.uses_ridge:
            per_tree += self.n_outputs * (self.n_features + 1) ** 2
        trees = self.n_trees if self.kind != "dgt" else 1
        return per_tree * trees
