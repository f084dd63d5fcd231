"""Refits beside the learner, applied at a fixed round: replay and restore stay exact.

A fit of a large window takes a good part of a second; run inside ``learn`` it stalls
the learner for that long.  A :class:`PendingFit` is one fit started at round ``N`` on a
copy of the window as it was then, computed on a worker thread (LightGBM's training
releases the GIL), and applied when the learner has learned round ``apply_at`` (``N``
plus a lag fixed by the schedule alone).  If the fit is not finished by then the
learner waits for it there.  Which ensemble decides each round is thus a function of
the log alone, never of how fast the worker ran: a replay, or a learner restored
from a checkpoint, decides the same.  A checkpoint taken while a fit is pending waits
for it and holds its result (:meth:`PendingFit.result`), to be applied at the same round.
"""

from __future__ import annotations

import importlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.boosted.fit import BoostingSettings, Router, fit_ensemble
from banditree.models.boosted.frozen import FrozenBoostedEnsemble
from banditree.models.boosted.stats import LeafSums

#: a fit of at least this many window rows runs on the worker (fewer: inside ``learn``,
#: where it costs a few tens of milliseconds)
BACKGROUND_ROWS = 2_000
#: the most rounds between a background fit's start and its use (fewer when the next
#: fit is due sooner); at 5,000 feedbacks a second, a fifth of a second
FIT_LAG = 1_000

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def fit_worker() -> ThreadPoolExecutor:
    """The process's fit worker: one thread, shared by every boosted model (fits are
    single-threaded, and a second core is what a fit beside the learner needs)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="boosted-fit")
        return _executor


def preload_lightgbm() -> Future[object]:
    """Import LightGBM on the fit worker (a second or more the first time), so that the
    first fit does not pay for it in ``learn``."""
    return fit_worker().submit(importlib.import_module, "lightgbm")


def apply_round(started: int, next_fit: int) -> int:
    """The round after which a fit started after round ``started`` is applied."""
    return started + max(1, min(next_fit - started, FIT_LAG))


class PendingFit:
    """One fit on a copy of the window, running on the worker or already done.

    Parameters
    ----------
    apply_at
        The learned rounds after which the learner applies it.
    """

    def __init__(
        self,
        apply_at: int,
        *,
        future: Future[FrozenBoostedEnsemble] | None = None,
        done: FrozenBoostedEnsemble | None = None,
    ) -> None:
        if (future is None) == (done is None):
            raise ValueError("a pending fit is either running or done")
        self.apply_at = apply_at
        self._future = future
        self._done = done

    @classmethod
    def start(
        cls,
        apply_at: int,
        rows: tuple[FloatArray, IntArray, FloatArray],
        n_actions: int,
        settings: BoostingSettings,
        seed: int,
        route: Router | None,
        sums: LeafSums | None = None,
    ) -> PendingFit:
        """Fit ``rows`` (copied: the window moves on meanwhile) on the worker."""
        contexts, actions, rewards = rows
        future = fit_worker().submit(
            fit_ensemble, contexts.copy(), actions.copy(), rewards.copy(), n_actions, settings,
            seed, route, sums,
        )  # fmt: skip
        return cls(apply_at, future=future)

    def result(self) -> FrozenBoostedEnsemble:
        """The fitted ensemble, waiting for the worker if it is still fitting (a failed
        fit raises here, as it would have inside ``learn``)."""
        if self._done is None:
            assert self._future is not None
            self._done = self._future.result()
            self._future = None
        return self._done
