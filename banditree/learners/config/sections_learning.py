"""The learning sections of a learner configuration: estimation and optimisation.

See :mod:`banditree.learners.config.sections` for how sections make the config.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from banditree.learners.config.sections import Section


class EstimationSection(Section):
    """Estimation: how feedback becomes a gradient, and the range of losses and targets."""

    estimator: Literal["bandit", "one_point", "two_point", "full"] | None = Field(
        None,
        description=(
            "classification: bandit (eq. 8); regression: one_point (default) or two_point; "
            "full = labels"
        ),
    )
    delta: float = Field(0.5, gt=0.0, le=1e6, description="perturbation of one/two-point feedback")
    regression_loss: Literal["squared", "huber"] = Field(
        "squared",
        description="regression, full estimator: the loss of the played value against the label",
    )
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
    loss_min: float | None = Field(
        None,
        description=(
            "the smallest loss feedback may report (give loss_max too); null: 0 for "
            "classification, unbounded for regression"
        ),
    )
    loss_max: float | None = Field(
        None,
        description="the largest loss feedback may report; null: 1 for classification, unbounded",
    )
    gradient_clip: float | None = Field(
        None,
        ge=0.0,
        le=1e6,
        description=(
            "clip each feedback's gradient estimate to this multiple of the running mean "
            "magnitude of the estimates before it (about the last 100 feedbacks); one past "
            "a million times that magnitude (a loss of 1e100) or not finite is refused, so that "
            "one absurd loss does not move the model and a large one moves it no more than "
            "an ordinary large one; before any magnitude is known (a fresh model) an "
            "estimate is judged against the one a loss of loss_max gives (without it, a "
            "residual of 10 x target_scale); counted in the feedback_clipped / feedback_refused "
            "counters; null: 5 for one-point regression, 50 for two-point and full "
            "information (regression losses have no bound), off for classification (losses "
            "in [0, 1], importance weights capped); 0: off"
        ),
    )
    target_offset: float = Field(
        0.0,
        description="regression: the played value is target_offset + target_scale * output",
    )
    target_scale: float = Field(
        1.0,
        gt=0.0,
        description="regression: the scale of the output in target units (see target_offset)",
    )


class OptimisationSection(Section):
    """Optimisation: the model's RMSprop steps and the inputs it learns from."""

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
    learning_rate_floor: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description=(
            "with learning_rate_decay: the decayed step never falls below this fraction of "
            "learning_rate, so that a long-running model can still follow a target that "
            "changes; null: 0.1; 0: none (the step shrinks for the life of the model)"
        ),
    )
    drift_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1e6,
        description=(
            "classification: a change detector on the loss stream (Page-Hinkley, a rise of "
            "the mean loss by more than 0.05, signalled when the statistic exceeds this "
            "threshold; see also drift_jump_threshold); a signal restarts the ridge (its "
            "rounds forgotten) and the explorer's schedule, shrinks the tree's leaves "
            "(drift_leaf_shrink), and is counted in drift_signals. Lower: faster reaction "
            "and more false signals on a noisy loss; null: 30 (a map shift on a set learned "
            "well is signalled in ~40 rounds; 200,000 stationary rounds of a fair coin's "
            "loss: no signal at 30, 1 at 20, 61 at 10); 0: off"
        ),
    )
    drift_challenger: int | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description=(
            "classification with the ridge and drift_threshold: for 10 x this many rounds "
            "after each change signal a fresh ridge learns beside the served one and takes "
            "its place once its squared error over its rounds is the lower (at least 0.3 x "
            "this many rounds old); one that has not won in this many rounds starts afresh. "
            "It follows a gradual change that the signal caught early; after an abrupt "
            "change the served ridge keeps its place, and without a signal nothing runs. "
            "null: 1,000; 0: off"
        ),
    )
    drift_jump_threshold: float | None = Field(
        None,
        ge=0.0,
        le=1e6,
        description=(
            "with drift_threshold: the detector's second test, for a jump of the mean loss "
            "by more than 0.25, signalled at this threshold (a map shift on a set learned "
            "well: ~15 rounds instead of ~35; its false signals are rarer than the first "
            "test's). null: 10; 0: off"
        ),
    )
    drift_leaf_shrink: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description=(
            "with drift_threshold: a change signal multiplies the tree's leaf values by "
            "this (the splits are kept), so that the tree relearns which action pays "
            "where instead of unlearning the old answer. null: 0.5; 1: keep them; 0: "
            "forget them"
        ),
    )
    accumulate: int = Field(
        4,
        ge=1,
        le=1024,
        description=(
            "feedbacks whose gradients are summed into one update (a learner's first 16 "
            "feedbacks each apply their own)"
        ),
    )
    l1: float = Field(0.0, ge=0.0, le=1.0, description="L1 penalty of the RMSprop step")
    l2: float = Field(0.0, ge=0.0, le=1.0, description="L2 penalty of the RMSprop step")
    standardize: bool = Field(
        True,
        description="standardise contexts with running statistics updated as feedback is learned",
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
