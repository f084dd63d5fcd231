"""One absurd feedback cannot cripple a model: bounded gradient estimates, finite optimiser state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from banditree.core.records import Feedback
from banditree.datasets import load
from banditree.learners import build_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.optim import RMSprop
from banditree.learners.robust import OUTLIER_RATIO, SCALE_RATE, WARMUP, FeedbackClip

WARM, AFTER = 500, 300


def _poisoned_rmse(
    mode: str, poison: float | None, seed: int, **extra: float
) -> tuple[float, GradientBandit]:
    """Test RMSE after ``WARM`` rounds, one round whose loss is ``poison`` (``None``: that
    round's feedback never arrives) and ``AFTER`` normal rounds, on Abalone."""
    ds = load("abalone")
    lo, hi = float(ds.y_train.min()), float(ds.y_train.max())
    learner = build_learner(
        {"task": "regression", "n_features": ds.n_features, "estimator": mode,
         "target_offset": lo, "target_scale": hi - lo, "seed": seed, **extra}
    )  # fmt: skip
    assert isinstance(learner, GradientBandit)
    order = np.random.default_rng(seed).permutation(len(ds.y_train))
    for t in range(WARM + 1 + AFTER):
        i = order[t]
        decision = learner.act(ds.X_train[i])
        y = float(ds.y_train[i])
        if t == WARM and poison is None:
            continue  # the control never sees this feedback
        if mode == "two_point":
            assert decision.probes is not None
            plus, minus = decision.probes
            losses = ((plus - y) ** 2, (minus - y) ** 2)
            if t == WARM and poison is not None:
                losses = (poison, losses[1])
            feedback = Feedback(losses=losses)
        else:
            assert decision.value is not None
            loss = (decision.value - y) ** 2
            feedback = Feedback(loss=poison if t == WARM and poison is not None else loss)
        learner.learn(decision, feedback)
    pred = learner.predict(ds.X_test)
    assert np.isfinite(pred).all()
    assert all(np.isfinite(p).all() for p in learner.parameters().values())
    return float(np.sqrt(np.mean((pred - ds.y_test) ** 2))), learner


@pytest.mark.parametrize("mode", ["one_point", "two_point"])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_absurd_loss_leaves_the_model_within_two_percent_of_a_control(
    mode: str, seed: int
) -> None:
    control, _ = _poisoned_rmse(mode, None, seed)
    for poison in (1e100, 1e300):
        rmse, learner = _poisoned_rmse(mode, poison, seed)
        assert abs(rmse / control - 1.0) <= 0.02, (poison, rmse, control)
        assert learner.counters["feedback_refused"] == 1  # refused, not clipped


@pytest.mark.parametrize("mode", ["one_point", "two_point"])
def test_a_large_loss_short_of_absurd_is_clipped_and_bounded(mode: str) -> None:
    """A loss of 1,000 (Abalone's squared errors are ~5-10) is past the clip's bound but
    short of the outlier limit: clipped, counted, and the model stays within the bound
    one large ordinary feedback gives (2 % of the control's RMSE)."""
    control, base = _poisoned_rmse(mode, None, 0)
    rmse, learner = _poisoned_rmse(mode, 1e3, 0)
    assert learner.counters["feedback_refused"] == 0
    assert learner.counters["feedback_clipped"] == base.counters["feedback_clipped"] + 1
    assert abs(rmse / control - 1.0) <= 0.02, (rmse, control)


def test_without_the_clip_the_same_feedback_cripples_the_one_point_model() -> None:
    """The clip is what the figures above rest on: off, a loss of 1e100 (whose square is
    still finite) swamps RMSprop's running average and the model nearly stops learning."""
    control, _ = _poisoned_rmse("one_point", None, 1, gradient_clip=0.0)
    rmse, learner = _poisoned_rmse("one_point", 1e100, 1, gradient_clip=0.0)
    assert rmse > 1.1 * control, (rmse, control)
    assert learner.counters["feedback_clipped"] == 0


def _feed(clip: FeedbackClip, value: float) -> float:
    """One estimate ``value`` through the clip; returns what the model would see."""
    wrapped = clip.wrap([lambda out: np.array([value])])
    seen = float(wrapped[0](np.zeros(1))[0])
    clip.record(wrapped)
    return seen


def test_the_scale_follows_a_real_change_and_one_outlier_moves_it_by_a_bounded_amount() -> None:
    clip = FeedbackClip(5.0)
    for _ in range(WARMUP + 200):
        _feed(clip, 1.0)
    assert clip.scale == pytest.approx(1.0) and clip.clipped == 0
    assert _feed(clip, 50.0) == pytest.approx(5.0)  # clipped to 5 x the scale
    assert clip.clipped == 1
    assert clip.scale == pytest.approx(1.0 + SCALE_RATE * 4.0)  # one clipped: +4 %
    scale = clip.scale
    assert _feed(clip, 1e300) == 0.0  # past OUTLIER_RATIO x the scale: refused
    assert clip.refused == 1 and clip.clipped == 1
    assert clip.scale == pytest.approx(scale * (1.0 + SCALE_RATE * 4.0))  # counted at the bound
    assert _feed(clip, math.inf) == 0.0
    assert clip.refused == 2
    # every estimate 100 x larger from now on: the scale catches up, learning goes on
    rounds = 0
    while clip.scale < 50.0:
        _feed(clip, 100.0)
        rounds += 1
    # x (1 + 4 SCALE_RATE) a feedback while clipped: ~100 feedbacks to x 50
    assert rounds <= 1.3 * math.log(50.0) / math.log(1.0 + 4.0 * SCALE_RATE)


def test_a_change_of_scale_past_the_outlier_limit_is_followed_too() -> None:
    """Estimates 1,000 x OUTLIER_RATIO x the scale from now on are refused at first, but
    each counts at the bound, so the scale catches up and they are taken (clipped) again:
    the model does not stop learning for good."""
    clip = FeedbackClip(5.0)
    for _ in range(WARMUP + 200):
        _feed(clip, 1.0)
    value = 1e3 * OUTLIER_RATIO
    seen = [_feed(clip, value) for _ in range(1000)]
    first = next(i for i, v in enumerate(seen) if v != 0.0)
    # refused while value > OUTLIER_RATIO x scale, the scale x 1.04 a feedback
    assert 0 < first <= 1.05 * math.log(1e3) / math.log(1.0 + 4.0 * SCALE_RATE)
    assert clip.refused == first and all(v > 0.0 for v in seen[first:])  # taken from then on
    assert seen[-1] == value  # and, the scale caught up, no longer clipped


def test_an_extreme_first_estimate_does_not_set_the_scale() -> None:
    clip = FeedbackClip(5.0)
    assert _feed(clip, 1e100) == 1e100  # nothing to judge the first one against
    for _ in range(WARMUP - 1):
        assert _feed(clip, 2.0) == 2.0
    assert clip.scale == pytest.approx(2.0)  # the median of the warm-up


def test_rmsprop_refuses_a_non_finite_square_and_keeps_its_state() -> None:
    opt = RMSprop(lr=0.1)
    params = {"w": np.zeros(3)}
    params = opt.step(params, {"w": np.ones(3)})
    before = opt.state_tensors()["square_avg.w"]
    after = opt.step(params, {"w": np.array([1e200, 1.0, 1.0])})
    assert opt.refused == 1
    np.testing.assert_array_equal(after["w"], params["w"])
    np.testing.assert_array_equal(opt.state_tensors()["square_avg.w"], before)
    stepped = opt.step(after, {"w": np.ones(3)})  # and it goes on learning
    assert (stepped["w"] < after["w"]).all()


def test_clip_counters_survive_a_checkpoint() -> None:
    from banditree.learners.factory import restore_learner

    _, learner = _poisoned_rmse("two_point", 1e100, 0)
    tensors, meta = learner.state()
    restored = restore_learner(tensors, meta)
    assert restored.counters["feedback_clipped"] == learner.counters["feedback_clipped"]
    assert isinstance(restored, GradientBandit) and restored._clip is not None
    assert learner._clip is not None
    assert restored._clip.scale == learner._clip.scale


@pytest.mark.parametrize("shape", [(1,), (1, 1), (3,)])
def test_a_clipped_upstream_judges_scalar_and_vector_estimates_alike(
    shape: tuple[int, ...],
) -> None:
    """A scalar output takes a path of its own (no numpy reductions): the same peak, the
    same clip and the same refusal of a non-finite estimate as a vector's."""
    clip = FeedbackClip(5.0)
    warmup = clip.wrap([lambda out: np.ones(shape)] * WARMUP)
    for wrapped in warmup:
        wrapped(np.zeros(shape))
    clip.record(warmup)
    assert clip.bound() == 5.0  # the scale: 1
    for value, expected, peak in (
        (-3.0, -3.0, 3.0),  # within the bound: as it is
        (-7.0, -5.0, 7.0),  # past it: clipped to the bound, its raw size remembered
        (OUTLIER_RATIO, 5.0, OUTLIER_RATIO),  # at the outlier limit: still clipped
        (-2.0 * OUTLIER_RATIO, 0.0, math.inf),  # past it: refused, as a non-finite one
        (math.inf, 0.0, math.inf),  # non-finite: refused, contributes nothing
        (math.nan, 0.0, math.inf),
    ):

        def upstream(out: np.ndarray, v: float = value) -> np.ndarray:
            return np.full(shape, v)

        (wrapped,) = clip.wrap([upstream])
        g = wrapped(np.zeros(shape))
        assert g.shape == shape and np.all(g == expected) and wrapped.peak == peak
