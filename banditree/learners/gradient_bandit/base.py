"""What every part of :class:`GradientBandit` reads: its attributes and the served snapshot."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, clip_ufunc, scalar_array
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.estimators import Estimator, OnePointEstimator, TwoPointEstimator
from banditree.explore import Explorer
from banditree.learners.base import Learner
from banditree.learners.batch_decisions import regression_columns
from banditree.learners.drift import LossRiseDetector
from banditree.learners.leaf_stats import LeafStats
from banditree.learners.optim import RMSprop
from banditree.learners.ridge import PerActionRidge
from banditree.learners.ridge_challenger import RidgeChallenger
from banditree.learners.robust import FeedbackClip
from banditree.learners.standardize import RunningStandardizer
from banditree.models.spec import BatchOutput, ModelSpec, Params

#: 1 as a 0-d array (numpy's faster operand, the same division)
_ONE = scalar_array(1.0)
_ONE.setflags(write=False)


@dataclass(frozen=True)
class Snapshot:
    """What a decision reads: one consistent version of parameters and input statistics."""

    version: int
    frozen: Any
    mean: FloatArray
    inv_scale: FloatArray


class GradientBase(Learner):
    """The state shared by deciding, learning and checkpointing (set by ``GradientBandit``)."""

    model: ModelSpec
    estimator: Estimator
    explorer: Explorer | None
    reward_link: str
    learning_rate: float
    learning_rate_decay: float | None
    learning_rate_floor: float
    accumulate: int
    standardize: bool
    loss_bounds: tuple[float, float] | None
    target_offset: float
    target_scale: float
    context_clip: float | None
    _rng: np.random.Generator
    _optimizer: RMSprop
    _params: Params
    _ridge: PerActionRidge | None
    _standardizer: RunningStandardizer
    _accum: Params
    _accum_finite: bool
    _buffer: list[tuple[FloatArray, Decision, Feedback]]
    _pending: int
    _snapshot: Snapshot
    _clip: FeedbackClip | None
    #: feedbacks whose update was dropped for not being finite
    _refused: int
    _detector: LossRiseDetector | None
    #: after a signal, fresh ridges challenging the served one (None: off)
    _challenger: RidgeChallenger | None
    #: what a signal multiplies the tree's leaf values by (1: kept)
    leaf_shrink: float
    #: rounds learned when the explorer's schedule last restarted (a detected change)
    _explore_origin: int
    #: per-leaf counts of a model with leaves (None: a family without them)
    _leaf_stats: LeafStats | None

    #: decisions and learning windows go through the compiled kernel where it covers
    #: them (:mod:`banditree.kernel`; False: ``BANDITREE_KERNEL=reference``)
    _native: bool = False

    #: contexts learned whose running statistics are not yet in ``_standardizer`` (with
    #: the kernel: folded in one call before a snapshot or a checkpoint reads them, and
    #: at the end of every ``learn`` / ``learn_batch``; the same statistics bit for bit)
    _input_rows: list[FloatArray]

    #: inside :meth:`learn_batch`: snapshots are frozen unprepared (no decision reads
    #: them before the batch ends, when the last one is prepared)
    _in_batch: bool = False

    def _make_snapshot(self, version: int) -> Snapshot:
        self._fold_inputs()
        std = self._standardizer
        mean, inv_scale = (
            # the mean itself: the standardizer replaces it whole at each update, never
            # writing into it (RunningStandardizer.update), so the snapshot keeps its own
            (std.mean, _ONE / std.scale())
            if self.standardize
            else (
                np.zeros(self.n_features),
                np.ones(self.n_features),
            )
        )
        model = self.model
        frozen = (
            model.freeze_unprepared(self._params) if self._in_batch else model.freeze(self._params)
        )
        return Snapshot(version, frozen, mean, inv_scale)

    def _fold_inputs(self) -> None:
        """Apply the deferred contexts to the running statistics, in their order."""
        rows = self._input_rows
        if rows:
            self._standardizer.update_each(np.array(rows))
            rows.clear()

    def _standardized(self, x: FloatArray, snap: Snapshot) -> FloatArray:
        """``x`` ``(d,)`` or ``(B, d)`` standardised with ``snap``'s statistics (a new array)."""
        z: FloatArray = (x - snap.mean) * snap.inv_scale
        if self.context_clip is not None:
            clip_in_place(z, self.context_clip)
        return z

    def _regression_columns(
        self,
        out: BatchOutput,
        x: FloatArray,
        ids: list[str],
        uniforms: FloatArray,
        version: int,
        given: object,
    ) -> DecisionColumns:
        """:func:`regression_columns` of a tick with this learner's target scale and its
        estimator's perturbation (one-point, two-point or none)."""
        est = self.estimator
        return regression_columns(
            out, x, ids, uniforms, version=version,
            target_offset=self.target_offset, target_scale=self.target_scale,
            one_point_delta=est.delta if isinstance(est, OnePointEstimator) else None,
            two_point_delta=est.delta if isinstance(est, TwoPointEstimator) else None,
            given=given,
        )  # fmt: skip

    @property
    def _explore_rounds(self) -> int:
        """The rounds the explorer's schedule reads: learned since the last detected change."""
        return self._n_learned - self._explore_origin

    @property
    def version(self) -> int:
        return self._snapshot.version


def clip_in_place(x: FloatArray, bound: float) -> None:
    """``np.clip(x, -bound, bound, out=x)`` by the clip ufunc itself, without ``np.clip``'s
    Python wrapper (the same values, a fifth of the time: ``docs/decisions/
    0008-library-hot-paths.md``), the bounds as 0-d arrays (numpy's faster operand; made
    once per bound)."""
    low, high = _clip_bounds(bound)
    clip_ufunc(x, low, high, out=x)


@functools.lru_cache(maxsize=64)
def _clip_bounds(bound: float) -> tuple[FloatArray, FloatArray]:
    low, high = scalar_array(-bound), scalar_array(bound)
    low.setflags(write=False)
    high.setflags(write=False)
    return low, high
