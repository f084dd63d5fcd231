"""A fresh model judges its first estimates against a prior scale (issue 41, item 7).

Before the fix the very first feedback of a fresh model had no scale to be judged
against: a loss of 1e100 entered RMSprop's running averages and shrank every later
step (Abalone, one-point: test RMSE 2.1x its twin's after 300 ordinary feedbacks).
"""

from __future__ import annotations

import numpy as np
import pytest

from banditree.core.records import Feedback
from banditree.datasets import load
from banditree.learners import build_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.robust import OUTLIER_RATIO, PRIOR_GROWTH, FeedbackClip

AFTER = 300


def _fresh_run(
    poison: float | None, seed: int, declared: bool
) -> tuple[float, int, GradientBandit]:
    """Test RMSE, the number of parameters moved and the learner after a first decision
    whose feedback is a loss of ``poison`` (``None``: its feedback never arrives, the
    twin) and ``AFTER`` ordinary one-point feedbacks on Abalone."""
    ds = load("abalone")
    config = {"task": "regression", "n_features": ds.n_features, "estimator": "one_point",
              "seed": seed}  # fmt: skip
    if declared:
        lo, hi = float(ds.y_train.min()), float(ds.y_train.max())
        config.update(target_offset=lo, target_scale=hi - lo)
    learner = build_learner(config)
    assert isinstance(learner, GradientBandit)
    order = np.random.default_rng(seed).permutation(len(ds.y_train))
    first = learner.act(ds.X_train[order[-1]])  # both take the same first decision
    start = {k: v.copy() for k, v in learner.parameters().items()}
    if poison is not None:
        learner.learn(first, Feedback(loss=poison))
        for name, value in learner.parameters().items():  # refused: nothing moved
            np.testing.assert_array_equal(value, start[name], err_msg=name)
    for i in order[:AFTER]:
        decision = learner.act(ds.X_train[i])
        assert decision.value is not None
        learner.learn(decision, Feedback(loss=(decision.value - float(ds.y_train[i])) ** 2))
    pred = learner.predict(ds.X_test)
    assert np.isfinite(pred).all()
    moved = sum(int((v != start[k]).sum()) for k, v in learner.parameters().items())
    return float(np.sqrt(np.mean((pred - ds.y_test) ** 2))), moved, learner


@pytest.mark.parametrize("declared", [True, False], ids=["target_scale", "default"])
@pytest.mark.parametrize("seed", [0, 1])
def test_an_absurd_first_feedback_leaves_a_fresh_model_as_its_twin(
    seed: int, declared: bool
) -> None:
    twin_rmse, twin_moved, _ = _fresh_run(None, seed, declared)
    rmse, moved, learner = _fresh_run(1e100, seed, declared)
    assert rmse <= 1.1 * twin_rmse, (rmse, twin_rmse)
    assert moved >= 0.9 * twin_moved, (moved, twin_moved)  # its tree keeps moving
    assert learner.counters["feedback_refused"] == 1
    assert learner._optimizer.refused == 0  # refused before the optimiser saw it


def _feed(clip: FeedbackClip, value: float) -> float:
    wrapped = clip.wrap([lambda out: np.array([value])])
    seen = float(wrapped[0](np.zeros(1))[0])
    clip.record(wrapped)
    return seen


def test_before_any_scale_an_estimate_past_the_prior_is_refused_and_raises_it() -> None:
    clip = FeedbackClip(5.0, prior=2.0)
    assert _feed(clip, 1e100) == 0.0 and clip.refused == 1
    assert clip.scale == 0.0  # it does not set the scale
    assert _feed(clip, 0.0) == 0.0 and clip.scale == 0.0  # a zero scale is no scale
    assert _feed(clip, 3.0 * OUTLIER_RATIO * 2.0 * PRIOR_GROWTH) == 0.0  # still refused
    assert clip.refused == 2
    # a real scale far past the prior is reached: 1e12 x the (raised) prior, refused
    # while past OUTLIER_RATIO x the prior, each refusal x PRIOR_GROWTH, then taken
    value = 1e12 * clip.prior  # type: ignore[operator]
    seen = [_feed(clip, value) for _ in range(10)]
    taken = next(i for i, v in enumerate(seen) if v != 0.0)
    assert taken == 6 and seen[taken] == value  # unclipped: no scale yet
    assert clip.scale == value


def test_a_declared_loss_max_sets_the_prior() -> None:
    """With ``loss_max`` declared a loss past it is refused at the door (422); the prior is
    the estimate a loss at the bound gives, so a first estimate within it is taken."""
    learner = build_learner({"task": "regression", "n_features": 2, "estimator": "one_point",
                             "loss_min": 0.0, "loss_max": 50.0})  # fmt: skip
    assert isinstance(learner, GradientBandit) and learner._clip is not None
    assert learner._clip.prior == pytest.approx(50.0 / 0.5)  # loss_max / delta, x target_scale 1
    decision = learner.act(np.zeros(2))
    assert learner.learn(decision, Feedback(loss=50.0)) is True
    assert learner.counters["feedback_refused"] == 0
