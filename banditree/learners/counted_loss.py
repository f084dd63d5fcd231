"""The loss a regression learner counts into ``progressive_mean_loss``, winsorised.

A regression loss has no bound: one feedback told a loss of ``1e100`` would make the
mean of the raw losses read about ``1e100 / n`` for the life of the model.  Each loss is
therefore counted clipped to ``[-b, b]`` with ``b = FACTOR x scale``, ``scale`` the
running mean of the magnitudes of the counted (clipped) losses before it (an
exponential average over about the last ``1 / SCALE_RATE`` feedbacks).  A loss within
:data:`FACTOR` times the typical one, every loss of an ordinary stream, is counted
exactly; an absurd one counts as ``FACTOR`` typical ones.  A real change of scale is
followed: while every loss is clipped the scale grows by ``1 + (FACTOR - 1) SCALE_RATE``
a feedback (x 1.19 a feedback at the defaults: x 50 in ~20 feedbacks).

The first :data:`WARMUP` losses set the scale: it is the lower median of their
magnitudes.  They are kept raw and counted clipped at ``FACTOR`` times the lower median
of those seen so far (of all of them, once there are :data:`WARMUP`), so that one
extreme early value can neither set the scale nor the mean.  When the scale is 0 (every
loss of the warmup exactly 0) the next loss is counted as it is and sets it.  The scale and the first losses are part of the learner's
counter state, so a checkpoint or a replay of the feedback log counts the same.
"""

from __future__ import annotations

import math

#: a counted loss is at most this many times the running scale of the counted losses
FACTOR = 20.0
#: weight of each counted loss in the running scale (about the last 100 feedbacks)
SCALE_RATE = 0.01
#: losses whose lower median sets the scale
WARMUP = 16


def _lower_median(values: tuple[float, ...]) -> float:
    mags = sorted(abs(v) for v in values)
    return mags[(len(mags) - 1) // 2]


def _clip(loss: float, scale: float) -> float:
    bound = FACTOR * scale
    return min(max(loss, -bound), bound)


def warmup_sum(warmup: tuple[float, ...]) -> float:
    """The counted sum of the losses kept while the scale is set (0 when none)."""
    if not warmup:
        return 0.0
    scale = _lower_median(warmup)
    if scale == 0.0:
        return math.fsum(warmup)
    return math.fsum(_clip(v, scale) for v in warmup)


def winsorise_loss(
    loss: float, total: float, scale: float, warmup: tuple[float, ...]
) -> tuple[float, float, tuple[float, ...]]:
    """Count one loss: the new ``(total, scale, warmup)`` from the old.

    The first :data:`WARMUP` losses are kept in ``warmup`` (:func:`warmup_sum` counts
    them) and set ``scale``; ``total`` sums the counted losses after them.  A NaN loss
    is not counted; an infinite one counts as the bound.
    """
    if math.isnan(loss):
        return total, scale, warmup
    if len(warmup) < WARMUP:
        warmup = (*warmup, loss if math.isfinite(loss) else math.copysign(1e308, loss))
        return total, _lower_median(warmup) if len(warmup) == WARMUP else 0.0, warmup
    if scale == 0.0:  # every loss so far exactly 0: this one sets the scale
        counted = loss if math.isfinite(loss) else 0.0
        return total + counted, abs(counted), warmup
    counted = _clip(loss, scale)
    return total + counted, scale + SCALE_RATE * (abs(counted) - scale), warmup
