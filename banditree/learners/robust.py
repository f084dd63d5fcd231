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
x 50 in ~100 feedbacks; x 1.49 at 50), and the model never stops learning.  The first
feedback has no scale to be judged against and passes unclipped (but finite); the
scale is the median of the first :data:`WARMUP` estimates, so that one extreme early
value cannot set it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray

#: weight of each new feedback in the running scale (about the last 100 feedbacks)
SCALE_RATE = 0.01
#: feedbacks whose median is the scale before the running average takes over
WARMUP = 16
#: an estimate past this multiple of the scale is refused, not clipped (never below the
#: clip's own bound)
OUTLIER_RATIO = 1e6

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
    and refuses one past :data:`OUTLIER_RATIO` x (or not finite).

    Use: :meth:`wrap` the upstreams of a batch (they share the bound of the scale
    before the batch), take the gradients, then :meth:`record` the wrapped upstreams to
    update the scale and the counters :attr:`clipped` and :attr:`refused`.
    """

    def __init__(self, factor: float) -> None:
        if not (math.isfinite(factor) and factor > 0.0):
            raise ValueError(f"gradient clip factor must be > 0, got {factor}")
        self.factor = float(factor)
        self.scale = 0.0
        self.count = 0
        self.clipped = 0
        self.refused = 0
        self._warmup: list[float] = []

    def bound(self) -> float:
        """The largest magnitude passed unclipped now (``inf`` before any positive scale)."""
        return self.factor * self.scale if self.scale > 0.0 else math.inf

    def limit(self) -> float:
        """The largest magnitude not refused now (``inf`` before any positive scale)."""
        return max(OUTLIER_RATIO, self.factor) * self.scale if self.scale > 0.0 else math.inf

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
            # scale is followed; with no scale yet, a refused one does not count
            seen = min(w.peak, w.bound)
            if math.isfinite(seen):
                self._observe(seen)

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
        }

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state`; ``None`` (a checkpoint from before the clip): start fresh."""
        state = state or {}
        self.scale = float(state.get("scale", 0.0))
        self.count = int(state.get("count", 0))
        self.clipped = int(state.get("clipped", 0))
        self.refused = int(state.get("refused", 0))
        self._warmup = [float(v) for v in state.get("warmup", [])]
