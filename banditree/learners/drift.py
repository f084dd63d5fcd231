"""A change detector on the loss stream: Page-Hinkley's test for a rise of the mean loss."""

from __future__ import annotations

import math
from collections import deque
from typing import Any

#: signals kept with where they happened (older ones are only counted in ``signals``)
RECENT_SIGNALS = 32


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

    ``jump_threshold``: a second test on the same mean, for a jump by more than
    ``jump_delta`` (0.25), signalled at this smaller threshold: a rise ``r`` ~ 0.9 then
    in ~15 rounds rather than ~35, which is what separates a model that stays within a
    few points of its old loss over the next 500 rounds from one that does not.  Its
    statistic drifts down by ``jump_delta`` a round, five times as fast, so a false
    signal is rarer than the first test's (about ``exp(-8 jump_delta jump_threshold)``:
    ``exp(-20)`` at 10; in a million rounds of a fair coin's loss: none at 10, 2 at 5).

    ``recent``: the newest :data:`RECENT_SIGNALS` signals, each with the test that
    fired (``rise`` or ``jump``), the rounds since the previous one and what the learner
    records with :meth:`locate` (the feedback that set it off): learner state, so a
    checkpoint and a replay of the same log hold the same ones.
    """

    def __init__(
        self,
        threshold: float,
        delta: float = 0.05,
        min_rounds: int = 200,
        jump_threshold: float | None = None,
        jump_delta: float = 0.25,
    ) -> None:
        for name, value in (("threshold", threshold), ("jump_threshold", jump_threshold)):
            if value is not None and not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be > 0, got {value}")
        self.threshold, self.delta, self.min_rounds = float(threshold), float(delta), min_rounds
        self.jump_threshold, self.jump_delta = jump_threshold, float(jump_delta)
        self.signals = 0
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_SIGNALS)
        self._reset()

    def _reset(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.cum = 0.0
        self.low = 0.0
        self.jump_cum = 0.0
        self.jump_low = 0.0

    def update(self, loss: float) -> bool:
        """Add one round's loss; True when a rise is signalled (the test then restarts)."""
        if not math.isfinite(loss):
            return False
        # in locals, each attribute read and written once (every feedback passes here);
        # ``x if x < low else low`` is ``min(low, x)``
        self.n = n = self.n + 1
        self.mean = mean = self.mean + (loss - self.mean) / n
        self.cum = cum = self.cum + (loss - mean - self.delta)
        low = self.low
        if cum < low:
            self.low = low = cum
        jump_cum = self.jump_cum + (loss - mean - self.jump_delta)
        self.jump_cum = jump_cum
        if jump_cum < self.jump_low:
            self.jump_low = jump_cum
        if n >= self.min_rounds:
            test = "rise" if cum - low > self.threshold else "jump" if self._jumped() else None
            if test is not None:
                self.signals += 1
                self.recent.append({"signal": self.signals, "test": test, "rounds": n})
                self._reset()
                return True
        return False

    def locate(self, **where: Any) -> None:
        """Add ``where`` (JSON values: the event, the feedback count, the model version)
        to the newest signal's record."""
        if self.recent:
            self.recent[-1].update(where)

    def _jumped(self) -> bool:
        jump = self.jump_threshold
        return jump is not None and self.jump_cum - self.jump_low > jump

    def state(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "cum": self.cum, "low": self.low,
                "jump_cum": self.jump_cum, "jump_low": self.jump_low,
                "signals": self.signals, "recent": list(self.recent)}  # fmt: skip

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state`; ``None`` (a checkpoint from before the detector): afresh."""
        self._reset()
        self.signals = 0
        self.recent.clear()
        if state:
            # a checkpoint from before the records: its signals are only counted
            self.recent.extend(dict(r) for r in state.get("recent", ()))
            self.n, self.mean = int(state["n"]), float(state["mean"])
            self.cum, self.low = float(state["cum"]), float(state["low"])
            self.signals = int(state["signals"])
            # a checkpoint from before the jump test: its statistic starts afresh
            self.jump_cum = float(state.get("jump_cum", 0.0))
            self.jump_low = float(state.get("jump_low", 0.0))
