"""Recent figures of every model a process serves, from its own samples of the counters.

Every :data:`SAMPLE_SECONDS` the process samples each served model's decisions,
feedbacks and summed progressive loss into a ring of :data:`SAMPLES` rows (a fixed
``(SAMPLES, 4)`` float64 array per model: 3.8 KB, whatever the traffic).  From the ring:
decisions and feedbacks per second over the last :data:`RATE_SECONDS`, the loss of the
feedback learned in that window, and a trend of :data:`TREND_POINTS` windowed losses
over the whole ring (the overview's sparkline); they are worked out at the first read
after a sample and kept until the next (one more small dict per model read).  Rates
are those this process sees; a model dropped by the process is forgotten at the next
sample.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

#: seconds between two samples
SAMPLE_SECONDS = 5.0
#: samples kept per model (ten minutes)
SAMPLES = 120
#: the window of the rates and of the windowed loss
RATE_SECONDS = 60.0
#: points of the loss trend (each the loss of the feedback learned in its stretch)
TREND_POINTS = 20
_T, _DECISIONS, _FEEDBACK, _LOSS_SUM = range(4)


class Counted(Protocol):
    """What a sample reads of a served model (a :class:`~service.domain.runtime.ModelRuntime`)."""

    @property
    def counters(self) -> Mapping[str, float]: ...


class _Ring:
    __slots__ = ("count", "figures", "rows")

    def __init__(self, samples: int) -> None:
        self.rows = np.zeros((samples, 4))
        self.count = 0  # samples written in all (the newest is at (count - 1) % samples)
        #: the figures of the newest sample, made at the first read after it
        self.figures: tuple[int, dict[str, Any]] | None = None

    def add(self, row: tuple[float, float, float, float]) -> None:
        self.rows[self.count % self.rows.shape[0]] = row
        self.count += 1

    def ordered(self) -> np.ndarray:
        """The kept samples, oldest first."""
        n = self.rows.shape[0]
        if self.count <= n:
            return self.rows[: self.count]
        start = self.count % n
        return np.concatenate([self.rows[start:], self.rows[:start]])


class ModelSeries:
    """The samples of every model served, by name (one ring each)."""

    def __init__(self, samples: int = SAMPLES) -> None:
        self._samples = samples
        self._rings: dict[str, _Ring] = {}

    def __len__(self) -> int:
        return len(self._rings)

    def sample(self, runtimes: Mapping[str, Counted], now: float) -> None:
        """One sample of every model in ``runtimes``; the others are forgotten."""
        for name in [n for n in self._rings if n not in runtimes]:
            del self._rings[name]
        for name, runtime in runtimes.items():
            counters = runtime.counters
            feedback = float(counters.get("feedback", 0))
            mean = counters.get("progressive_mean_loss")
            loss_sum = feedback * float(mean) if mean is not None and math.isfinite(mean) else 0.0
            ring = self._rings.get(name)
            if ring is None:
                ring = self._rings[name] = _Ring(self._samples)
            ring.add((now, float(counters.get("decisions", 0)), feedback, loss_sum))

    def figures(self, name: str) -> dict[str, Any] | None:
        """Rates, windowed loss and trend of ``name``; None before two samples of it."""
        ring = self._rings.get(name)
        if ring is None or ring.count < 2:
            return None
        if ring.figures is None or ring.figures[0] != ring.count:
            ring.figures = (ring.count, _figures(ring.ordered()))
        return ring.figures[1]

    async def run(
        self, runtimes: Callable[[], Mapping[str, Counted]], every: float = SAMPLE_SECONDS
    ) -> None:
        """Sample ``runtimes()`` every ``every`` seconds until cancelled."""
        while True:
            self.sample(runtimes(), time.time())
            await asyncio.sleep(every)


def _figures(rows: np.ndarray) -> dict[str, Any]:
    """The figures of a ring's samples ``rows`` (oldest first, at least two)."""
    last = rows[-1]
    recent = rows[rows[:, _T] >= last[_T] - RATE_SECONDS - 1e-9]
    first = recent[0] if len(recent) >= 2 else rows[-2]
    seconds = float(last[_T] - first[_T])
    return {
        "seconds": seconds,
        "decisions_per_second": _rate(last[_DECISIONS] - first[_DECISIONS], seconds),
        "feedback_per_second": _rate(last[_FEEDBACK] - first[_FEEDBACK], seconds),
        "window_loss": _loss(first, last),
        "loss_trend": _trend(rows),
    }


def _rate(delta: float, seconds: float) -> float | None:
    return float(delta) / seconds if seconds > 0 else None


def _loss(first: np.ndarray, last: np.ndarray) -> float | None:
    """The mean progressive loss of the feedback learned between two samples."""
    learned = last[_FEEDBACK] - first[_FEEDBACK]
    if learned <= 0:
        return None
    value = float((last[_LOSS_SUM] - first[_LOSS_SUM]) / learned)
    return value if math.isfinite(value) else None


def _trend(rows: np.ndarray) -> list[float | None]:
    """Up to :data:`TREND_POINTS` windowed losses over ``rows``, oldest first."""
    cuts = _cuts(len(rows))
    a, b = rows[cuts[:-1]], rows[cuts[1:]]
    learned = b[:, _FEEDBACK] - a[:, _FEEDBACK]
    summed = b[:, _LOSS_SUM] - a[:, _LOSS_SUM]
    ok = learned > 0
    losses = np.divide(summed, learned, out=np.zeros_like(summed), where=ok)
    ok &= np.isfinite(losses)
    return [float(v) if k else None for v, k in zip(losses.tolist(), ok.tolist(), strict=True)]


@functools.cache
def _cuts(n: int) -> np.ndarray:
    """The sample indices that split ``n`` samples into the trend's stretches."""
    return np.unique(np.linspace(0, n - 1, min(TREND_POINTS, n - 1) + 1).round()).astype(np.intp)
