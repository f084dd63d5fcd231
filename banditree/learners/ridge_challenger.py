"""After a change: a fresh ridge that replaces the served one when it predicts better.

A change detector's signal restarts the ridge (:meth:`Learning._on_drift`), but a
gradual change is signalled early, while most rounds still follow the old world: the
restarted ridge then learns a mixture that goes stale as the change goes on, and the
exact ridge never forgets it.  For :attr:`PHASE` x ``rounds`` rounds after a signal a
challenger, a ridge started afresh, learns every round beside the served one (the
champion).  Each round both predict the played action's reward before learning it; a
challenger at least :attr:`MIN_AGE` x ``rounds`` rounds old whose summed squared error
over its life is below the champion's over the same rounds takes its place (the
champion's rounds are forgotten), and a new challenger starts.  One that has not won
after ``rounds`` rounds starts afresh.  After an abrupt change the champion, started at
the signal, has every round the challenger has and more, so it keeps its place; while
a gradual change goes on a challenger that saw only recent rounds wins.  Outside the
phase nothing runs, so a stationary stream (no signal) costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.learners.ridge import PerActionRidge

#: rounds after a signal that challengers run, in challenger lifetimes
PHASE = 10
#: the youngest challenger that can win, as a fraction of its lifetime
MIN_AGE = 0.3
_ARRAYS = ("inv_gram", "weights", "mix_stats")


class RidgeChallenger:
    """Fresh ridges challenging the served ridge for a while after each change signal."""

    def __init__(self, champion: PerActionRidge, rounds: int) -> None:
        if rounds < 1:
            raise ValueError(f"challenger rounds must be >= 1, got {rounds}")
        self.rounds = int(rounds)
        self.min_age = max(1, int(MIN_AGE * rounds))
        self.challenger = champion.blank()
        #: rounds left in the phase (0: none running), the challenger's age, and both
        #: ridges' summed squared errors over its life
        self.left = 0
        self.age = 0
        self.errors = np.zeros(2)
        self.promotions = 0

    def start(self, champion: PerActionRidge) -> None:
        """A signal: the phase (re)starts with a fresh challenger."""
        self.left = PHASE * self.rounds
        self._fresh(champion)

    def _fresh(self, champion: PerActionRidge) -> None:
        k, d = champion.weights.shape[0], champion.n_features
        self.challenger.restart(np.zeros((k, d)), champion.prior.copy())
        self.age = 0
        self.errors[:] = 0.0

    def update_rows(
        self,
        champion: PerActionRidge,
        x: FloatArray,
        actions: Sequence[int],
        rewards: Sequence[float],
    ) -> int:
        """:meth:`PerActionRidge.update_rows` of the champion, with the challenge while
        the phase runs; returns the champion's rows applied."""
        if self.left <= 0:
            return champion.update_rows(x, actions, rewards)
        applied = 0
        u = np.ones(x.shape[1] + 1)
        for row, action, reward in zip(x, actions, rewards, strict=True):
            if self.left <= 0:  # the phase ended inside the batch
                applied += champion.update_rows(row[None, :], [action], [reward])
                continue
            u[:-1] = row
            with np.errstate(all="ignore"):
                errs = [reward - float(r.weights[action] @ u) for r in (champion, self.challenger)]
            ok = champion.update_rows(row[None, :], [action], [reward])
            applied += ok
            if ok and self.challenger.update_rows(row[None, :], [action], [reward]):
                self.errors += np.square(errs)
                self.age += 1
            self.left -= 1
            if self.age >= self.min_age and self.errors[1] < self.errors[0]:
                for name in _ARRAYS:
                    getattr(champion, name)[:] = getattr(self.challenger, name)
                self.promotions += 1
                self._fresh(champion)
            elif self.age >= self.rounds:
                self._fresh(champion)
        return applied

    def tensors(self) -> dict[str, FloatArray]:
        return {f"ridge_challenger.{n}": getattr(self.challenger, n).copy() for n in _ARRAYS}

    def state(self) -> dict[str, Any]:
        return {"left": self.left, "age": self.age, "errors": self.errors.tolist(),
                "promotions": self.promotions}  # fmt: skip

    def load_state(
        self, champion: PerActionRidge, tensors: dict[str, Any], state: dict[str, Any] | None
    ) -> None:
        """Restore :meth:`tensors` and :meth:`state`; ``None`` (a checkpoint from before
        the challenger): no phase running."""
        self.left, self.age, self.errors[:], self.promotions = 0, 0, 0.0, 0
        if not state:
            return
        for name in _ARRAYS:
            value = np.array(tensors[f"ridge_challenger.{name}"], dtype=np.float64)
            if value.shape != getattr(self.challenger, name).shape or not np.isfinite(value).all():
                raise ValueError(f"checkpoint ridge_challenger.{name} does not match the model")
            setattr(self.challenger, name, value)
        self.challenger.prior = champion.prior.copy()
        self.left, self.age = int(state["left"]), int(state["age"])
        self.errors[:] = [float(v) for v in state["errors"]]
        self.promotions = int(state["promotions"])
