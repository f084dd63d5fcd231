"""Bounded per-feedback updates: one feedback cannot move a model further than a bound.

A learner turns each feedback into a gradient estimate ``g = d loss / d output`` (the
estimator's "upstream").  :class:`FeedbackClip` judges every estimate against the
running mean of the magnitudes of the estimates before it (``|g|``'s exponential
average over the last ``1 / SCALE_RATE`` feedbacks, the bounded values entering it):

- within ``factor`` times that scale it passes as it is;
- past it, it is clipped, elementwise, to ``factor`` times the scale (for two-point
  regression with the squared loss ``g = 2 (y_hat - y)``, so the clip is the Huber loss
  with a threshold that follows the residuals' own scale);
- past :data:`OUTLIER_RATIO` (a million) times the scale (a loss of 1e100 or 1e300), or
  not finite, it is refused: the feedback contributes nothing to the gradient.
  Clipping such a value would still push the model as hard as the largest ordinary
  feedback, on nothing.  Real estimates do reach thousands of times the scale: a
  one-point estimate carries the squared residual, and on pol (targets mostly 0, some
  near 100) they reach 17,000 times it, so the line is drawn far above that.

The bound it gives: a feedback moves the model no further than one feedback whose
gradient estimate is ``factor`` times the typical one, and the optimiser then moves
each parameter by at most its step times ``1 / sqrt(1 - alpha)`` (RMSprop's own bound);
an absurd one does not move it at all.  A real change of scale is followed: a clipped
or refused estimate enters the scale at the clip's bound, so while every estimate is
past it the scale grows by ``1 + (factor - 1) SCALE_RATE`` a feedback (x 1.04 at 5:
x 50 in ~100 feedbacks; x 1.49 at 50), and the model never stops learning.  The scale
is the median of the first :data:`WARMUP` estimates, so that one extreme early value
cannot set it.

Before any scale exists (a fresh model, or one whose estimates so far were all 0) an
estimate is judged against a *prior*: the estimate a loss at the model's declared
bound gives (``loss_max``; without one, a regression loss of ``(PRIOR_SPAN x
target_scale)^2``, a residual ten times the declared scale of the target).  Past
``OUTLIER_RATIO`` times that prior it is refused as above, so that a loss of 1e100 as
the very first feedback never reaches the optimiser's running averages (where it
would shrink every later step for hundreds of feedbacks); within it, it passes
unclipped.  A refused one does not enter the warm-up but multiplies the prior by
:data:`PRIOR_GROWTH`, so a model whose real scale is past the prior (a target far
beyond its declared ``target_scale``) still learns: an estimate 1e12 times the prior
is refused 6 times, then taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.estimators import Estimator

#: weight of each new feedback in the running scale (about the last 100 feedbacks)
SCALE_RATE = 0.01
#: feedbacks whose median is the scale before the running average takes over
WARMUP = 16
#: an estimate past this multiple of the scale is refused, not clipped (never below the
#: clip's own bound)
OUTLIER_RATIO = 1e6
#: without a declared ``loss_max``, a fresh regression model's prior loss is that of a
#: residual of this many ``target_scale``\ s (squared)
PRIOR_SPAN = 10.0
#: what each estimate refused against the prior multiplies it by
PRIOR_GROWTH = 10.0

UpstreamFn = Callable[[FloatArray], FloatArray]


class _Clipped:
    """An upstream clipped to ``[-bound, bound]`` and refused past ``limit`` (or not
    finite); remembers the largest raw magnitude (``inf`` once refused)."""

    __slots__ = ("bound", "inner", "limit", "peak")

    def __init__(self, inner: UpstreamFn, bound: float, limit: float) -> None:
        self.inner, self.bound, self.limit = inner, bound, limit
        self.peak = -1.0  # -1: never called

    def __call__(self, output: FloatArray) -> FloatArray:
        g = np.asarray(self.inner(output), dtype=np.float64)
        if g.size == 1:  # a scalar output (regression): the same peak without numpy's calls
            peak = abs(g.item())
        elif g.size:
            with np.errstate(all="ignore"):
                peak = float(np.max(np.abs(g)))
        else:
            peak = 0.0
        if not peak <= self.limit:  # NaN and inf included
            self.peak = math.inf
            return np.zeros_like(g)  # refused: contributes nothing
        self.peak = max(self.peak, peak)
        if peak > self.bound:
            return np.clip(g, -self.bound, self.bound)
        return g


class FeedbackClip:
    """Clips each feedback's gradient estimate to ``factor`` x its running mean magnitude
    and refuses one past :data:`OUTLIER_RATIO` x (or not finite); before any scale,
    refuses one past :data:`OUTLIER_RATIO` x ``prior`` (``None``: none is refused then).

    Use: :meth:`wrap` the upstreams of a batch (they share the bound of the scale
    before the batch), take the gradients, then :meth:`record` the wrapped upstreams to
    update the scale and the counters :attr:`clipped` and :attr:`refused`.
    """

    def __init__(self, factor: float, prior: float | None = None) -> None:
        if not (math.isfinite(factor) and factor > 0.0):
            raise ValueError(f"gradient clip factor must be > 0, got {factor}")
        if prior is not None and not (math.isfinite(prior) and prior > 0.0):
            raise ValueError(f"gradient clip prior must be > 0, got {prior}")
        self.factor = float(factor)
        self.prior = prior
        self.scale = 0.0
        self.count = 0
        self.clipped = 0
        self.refused = 0
        self._warmup: list[float] = []

    def bound(self) -> float:
        """The largest magnitude passed unclipped now (``inf`` before any positive scale)."""
        return self.factor * self.scale if self.scale > 0.0 else math.inf

    def limit(self) -> float:
        """The largest magnitude not refused now: against the scale, or before any
        positive scale against the prior (``inf`` without one)."""
        scale = self.scale if self.scale > 0.0 else self.prior
        return max(OUTLIER_RATIO, self.factor) * scale if scale else math.inf

    def wrap(self, upstreams: Sequence[UpstreamFn]) -> list[_Clipped]:
        bound, limit = self.bound(), self.limit()
        return [_Clipped(up, bound, limit) for up in upstreams]

    def record(self, wrapped: Sequence[_Clipped]) -> None:
        """Fold the magnitudes the wrapped upstreams saw into the scale, in order."""
        for w in wrapped:
            if w.peak < 0.0:  # not used (a bagged forest gave the example no tree)
                continue
            if not math.isfinite(w.peak):
                self.refused += 1
            elif w.peak > w.bound:
                self.clipped += 1
            # a clipped or refused estimate counts at the bound, so a real change of
            # scale is followed; with no scale yet, a refused one does not count, but
            # raises the prior (a real scale far past it is reached in a few feedbacks)
            seen = min(w.peak, w.bound)
            if math.isfinite(seen):
                self._observe(seen)
            elif self.prior is not None and self.scale <= 0.0:
                self.prior *= PRIOR_GROWTH

    def _observe(self, magnitude: float) -> None:
        self.count += 1
        if self.count <= WARMUP:
            self._warmup.append(magnitude)
            self.scale = float(np.median(self._warmup))
            if self.count == WARMUP:
                self._warmup = []
            return
        self.scale += SCALE_RATE * (magnitude - self.scale)

    def state(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "count": self.count,
            "clipped": self.clipped,
            "refused": self.refused,
            "warmup": list(self._warmup),
            "prior": self.prior,
        }

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state`; ``None`` (a checkpoint from before the clip): start fresh."""
        state = state or {}
        self.scale = float(state.get("scale", 0.0))
        self.count = int(state.get("count", 0))
        self.clipped = int(state.get("clipped", 0))
        self.refused = int(state.get("refused", 0))
        self._warmup = [float(v) for v in state.get("warmup", [])]
        prior = state.get("prior")
        if prior is not None:  # a checkpoint from before the prior keeps the config's
            self.prior = float(prior)


def prior_magnitude(
    estimator: Estimator, loss_bounds: tuple[float, float] | None, target_scale: float
) -> float:
    """The prior a fresh learner's :class:`FeedbackClip` judges its first estimates against,
    in the units of the learner's upstream (regression: ``d loss / d output``, the
    estimator's derivative times ``target_scale``).

    The loss it expects at most: the larger bound of ``loss_bounds`` when declared;
    otherwise, for regression, that of a residual of :data:`PRIOR_SPAN` x ``target_scale``
    (its square, or itself when larger: a loss may be absolute rather than squared).
    """
    if loss_bounds is not None:
        loss = max(abs(loss_bounds[0]), abs(loss_bounds[1]))
    else:
        span = PRIOR_SPAN * target_scale
        loss = max(span, span * span)
    unit = target_scale if estimator.task == "regression" else 1.0
    # never 0 (a bound of [0, 0]): a prior of 0 would refuse every estimate
    return max(estimator.magnitude(loss) * unit, math.ulp(1.0))
