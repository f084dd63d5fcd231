"""progressive_mean_loss of a regression model: each loss counted winsorised, so that
one absurd feedback cannot make the reported mean absurd (banditree.learners.counted_loss)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from banditree.core.records import Feedback
from banditree.learners import build_learner, restore_learner
from banditree.learners.counted_loss import FACTOR, SCALE_RATE, WARMUP, warmup_sum, winsorise_loss
from tests.learners.test_robust_updates import WARM, _poisoned_rmse


def _count(losses: list[float]) -> tuple[float, float, tuple[float, ...]]:
    total, scale, warmup = 0.0, 0.0, ()
    for loss in losses:
        total, scale, warmup = winsorise_loss(loss, total, scale, warmup)
    return total, scale, warmup


def _mean(losses: list[float]) -> float:
    total, _, warmup = _count(losses)
    return (total + warmup_sum(warmup)) / len(losses)


@pytest.mark.parametrize("mode", ["one_point", "two_point"])
@pytest.mark.parametrize("poison", [1e100, 1e300])
def test_one_absurd_loss_moves_the_reported_mean_by_at_most_the_bound(
    mode: str, poison: float
) -> None:
    _, control = _poisoned_rmse(mode, None, 0)
    _, poisoned = _poisoned_rmse(mode, poison, 0)
    ours, theirs = (m.counters["progressive_mean_loss"] for m in (poisoned, control))
    assert math.isfinite(ours)
    # the poisoned round counts at most FACTOR typical losses: ~20 / 801 of the mean
    assert 0.98 <= ours / theirs <= 1.0 + 2.0 * FACTOR / (2 * WARM), (ours, theirs)


def test_an_ordinary_stream_is_counted_exactly() -> None:
    rng = np.random.default_rng(0)
    losses = (rng.standard_normal(3000) ** 2).tolist()  # squared errors of a normal model
    assert _mean(losses) == pytest.approx(float(np.mean(losses)), rel=1e-12)


def test_classification_losses_are_counted_as_they_are() -> None:
    learner = build_learner({"n_features": 2, "n_actions": 3, "seed": 0})
    losses = [0.0, 1.0, 0.5, 1.0, 0.0, 0.25] * 10
    for loss in losses:
        learner.learn(learner.act([0.1, 0.2]), Feedback(loss=loss))
    assert learner.counters["progressive_mean_loss"] == pytest.approx(np.mean(losses), rel=1e-12)


def test_an_extreme_first_loss_neither_sets_the_scale_nor_the_mean() -> None:
    losses = [1e100] + [1.0] * (WARMUP - 1)
    total, scale, warmup = _count(losses)
    assert scale == 1.0
    assert (total + warmup_sum(warmup)) / len(losses) == pytest.approx(
        (FACTOR + WARMUP - 1) / WARMUP
    )
    # before the warmup ends the extreme value is clipped at the median of those so far
    assert _mean([1.0, 1e100]) == pytest.approx((1.0 + FACTOR) / 2)


def test_a_real_change_of_scale_is_followed() -> None:
    losses = [1.0] * 200
    total, scale, warmup = _count(losses)
    steps = 0
    while FACTOR * scale < 1e6:  # every loss a million times the old scale
        total, scale, warmup = winsorise_loss(1e6, total, scale, warmup)
        steps += 1
    growth = 1.0 + (FACTOR - 1.0) * SCALE_RATE
    assert steps <= math.ceil(math.log(1e6 / FACTOR) / math.log(growth)) + 1
    before = total
    total, scale, warmup = winsorise_loss(1e6, total, scale, warmup)
    assert total - before == 1e6  # counted whole once the scale has caught up


def test_the_count_survives_a_checkpoint() -> None:
    config = {"task": "regression", "n_features": 3, "seed": 1}
    rng = np.random.default_rng(1)
    x = rng.standard_normal((120, 3))
    losses = (rng.standard_normal(120) ** 2).tolist()
    losses[5], losses[60] = 1e300, 1e100  # one in the warmup, one after it
    whole = build_learner(config)
    first = build_learner(config)
    for t in range(120):
        whole.learn(whole.act(x[t]), Feedback(loss=losses[t]))
        first.learn(first.act(x[t]), Feedback(loss=losses[t]))
        if t in (3, 40):  # inside the warmup and after it
            tensors, meta = first.state()
            first = restore_learner(tensors, meta)
    assert first.counters == whole.counters
    assert whole.counters["progressive_mean_loss"] < 10 * FACTOR
