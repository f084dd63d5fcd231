"""A change detector on the loss stream: Page-Hinkley's test for a rise of the mean loss."""

from __future__ import annotations

import math
from typing import Any


class LossRiseDetector:
    """Signals when the mean loss has risen by more than ``delta`` (Page-Hinkley).

    ``m_t = sum_{s <= t} (loss_s - mean_t - delta)`` with ``mean_t`` the mean loss since
    the last signal; the test signals when ``m_t - min_s m_s > threshold`` after at least
    ``min_rounds`` rounds, then starts afresh.  On a stationary stream of losses in
    ``[0, 1]`` the statistic drifts down by ``delta`` a round, so a false signal needs an
    excursion of ``threshold`` against that drift (probability about
    ``exp(-8 delta threshold)`` at variance 1/4: ``exp(-40)`` at the defaults); a rise of
    the mean by ``r > delta`` is signalled after about ``threshold / (r - delta)``
    rounds (a map shift on a set the model had right, ``r`` ~ 0.8: ~40 rounds).
    """

    def __init__(self, threshold: float, delta: float = 0.05, min_rounds: int = 200) -> None:
        if not (math.isfinite(threshold) and threshold > 0.0):
            raise ValueError(f"threshold must be > 0, got {threshold}")
        self.threshold, self.delta, self.min_rounds = float(threshold), float(delta), min_rounds
        self.signals = 0
        self._reset()

    def _reset(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.cum = 0.0
        self.low = 0.0

    def update(self, loss: float) -> bool:
        """Add one round's loss; True when a rise is signalled (the test then restarts)."""
        if not math.isfinite(loss):
            return False
        self.n += 1
        self.mean += (loss - self.mean) / self.n
        self.cum += loss - self.mean - self.delta
        self.low = min(self.low, self.cum)
        if self.n >= self.min_rounds and self.cum - self.low > self.threshold:
            self.signals += 1
            self._reset()
            return True
        return False

    def state(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "cum": self.cum, "low": self.low,
                "signals": self.signals}  # fmt: skip

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state`; ``None`` (a checkpoint from before the detector): afresh."""
        self._reset()
        self.signals = 0
        if state:
            self.n, self.mean = int(state["n"]), float(state["mean"])
            self.cum, self.low = float(state["cum"]), float(state["low"])
            self.signals = int(state["signals"])
