"""Per-action online ridge regression (recursive least squares) of the played reward."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from banditree.core.arrays import FloatArray, scalar_array
from banditree.kernel import native

_min = np.minimum.reduce
#: exponent of the mix that serves the ridge fit alone (weight 1 - 2e-22)
_TRUSTED = 50.0
#: weight of the prior in the mean reward the mix compares the ridge with, in rounds
MIX_MEAN_PRIOR = 1.0
#: multiply-adds of one product of a fold (``PerActionRidge.defer``): OpenBLAS starts
#: threads for a larger one (above 4 x 65,536), which cost 4x the time on a busy machine
FOLD_PRODUCT = 1 << 17


class PerActionRidge:
    """``w_a = argmin sum_t (w . u_t - r_t)^2 + l2 |w - w0|^2`` over the rounds that played ``a``.

    ``u = (x, 1)``: the standardised context and an intercept.  Each round updates
    the played action's inverse Gram matrix by Sherman-Morrison (``O(d^2)``), so the
    weights are the exact ridge solution of every round seen so far, from the first
    round on: a second-order fit that a first-order step (AdaGrad) reaches only after
    many rounds.  ``w0`` is the prior (intercept ``prior``, no slope).

    Parameters
    ----------
    n_actions, n_features
        ``K`` and ``d``.
    l2
        Ridge penalty on the slopes (the prior's weight, in rounds).
    intercept_l2
        Penalty on the intercept (``None``: ``l2``).
    prior
        Initial intercept of every action (the predicted reward before any round).
    mix_rate
        ``> 0``: while an action has fewer rounds than features (when its slopes can
        fit noise), :meth:`served` gives it the exponential-weights mix (this rate) of
        its ridge fit and its mean reward (prior weight :data:`MIX_MEAN_PRIOR`).  The
        evidence is pooled over the actions: the progressive squared errors of each
        action's ridge and mean on that action's first ``d`` rounds (each predicts a
        round before learning it), summed over every action, so that one action's few
        rounds are judged with what the others' rounds say about the data; from ``d``
        rounds on, and with ``0``, an action is served its ridge fit alone.
    defer
        ``> 0``: each round's rank-one change of ``A^-1`` is kept apart, as a row
        ``s = A^-1 u / sqrt(1 + u . A^-1 u)`` of ``pending``, until ``defer`` rounds of
        the action are; then one product folds them into ``inv_gram``
        (``A^-1 = inv_gram - S^T S``, :meth:`inverse`).  The same exact solution, round
        by round (each round reads ``A^-1 u`` through the rows kept), for one pass over
        ``inv_gram`` per ``defer`` rounds instead of three per round: worth it for a
        large ``d`` (the ranking learner's crosses); ``0`` updates ``inv_gram`` every round.
    """

    def __init__(
        self,
        n_actions: int,
        n_features: int,
        l2: float = 1.0,
        prior: float = 0.0,
        intercept_l2: float | None = None,
        mix_rate: float = 0.0,
        defer: int = 0,
    ) -> None:
        intercept_l2 = l2 if intercept_l2 is None else intercept_l2
        for name, value in (("l2", l2), ("intercept_l2", intercept_l2)):
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be > 0, got {value}")
        if not (np.isfinite(mix_rate) and mix_rate >= 0.0):
            raise ValueError(f"mix_rate must be >= 0, got {mix_rate}")
        if defer < 0:
            raise ValueError(f"defer must be >= 0, got {defer}")
        self.mix_rate = float(mix_rate)
        self.n_features = n_features  # the mix ends once an action has this many rounds
        #: per action: rounds learned, their summed reward, and the progressive squared
        #: error of the mean minus that of the ridge (> 0: the ridge predicts better);
        #: counted until the action has ``d`` rounds, when its mix ends (the evidence
        #: of the mix is the sum of the last column)
        self.mix_stats: FloatArray = np.zeros((n_actions, 3))
        dim = n_features + 1
        penalty = np.full(dim, float(l2))
        penalty[-1] = intercept_l2
        self._penalty = penalty
        self.inv_gram: FloatArray = np.empty((n_actions, dim, dim))
        self.weights: FloatArray = np.zeros((n_actions, dim))
        self.defer = defer
        #: per action, the rows ``s`` of the rounds not yet folded into ``inv_gram``
        #: (``defer``), zero past their count ``pending_rounds``
        self.pending: FloatArray = np.zeros((n_actions, defer, dim))
        self.pending_rounds: FloatArray = np.zeros(n_actions)
        #: the compiled kernel that applies the rounds without ``defer`` (None: numpy,
        #: the reference; raises KernelUnavailable when asked for and missing)
        self.kernel = native()
        self.restart(np.zeros((n_actions, n_features)), np.full(n_actions, float(prior)))

    def restart(self, slopes: FloatArray, intercepts: FloatArray, trusted: bool = False) -> None:
        """Forget every round: the prior becomes ``slopes`` ``(K, d)`` and ``intercepts`` ``(K,)``.

        ``trusted``: the mix (``mix_rate``) serves the prior whole from the start (a
        linear term trained elsewhere), not its mix with the mean reward.
        """
        self.inv_gram[:] = np.diag(1.0 / self._penalty)
        self.pending[:] = 0.0
        self.pending_rounds[:] = 0.0
        self.weights[:, :-1] = slopes
        self.weights[:, -1] = intercepts
        self.prior = intercepts.astype(np.float64).copy()
        self.mix_stats[:] = 0.0
        if trusted and self.mix_rate > 0.0:
            self.mix_stats[:, 2] = _TRUSTED / self.mix_rate

    def blank(self) -> PerActionRidge:
        """A ridge of the same shape, penalties and mix, at this one's prior (no rounds)."""
        out = PerActionRidge(
            len(self.weights), self.n_features, float(self._penalty[0]),
            intercept_l2=float(self._penalty[-1]), mix_rate=self.mix_rate, defer=self.defer,
        )  # fmt: skip
        out.restart(np.zeros((len(self.weights), self.n_features)), self.prior.copy())
        out.kernel = self.kernel
        return out

    def inverse(self, action: int) -> FloatArray:
        """``A^-1`` ``(d + 1, d + 1)`` of ``action``: ``inv_gram`` less the rows not yet
        folded into it (a new array; ``inv_gram[action]`` itself with ``defer`` 0)."""
        s = self.pending[action, : int(self.pending_rounds[action])]
        if not len(s):
            return self.inv_gram[action]
        out: FloatArray = self.inv_gram[action] - s.T @ s
        return out

    def update(self, x: FloatArray, action: int, reward: float) -> bool:
        """One round: context ``x`` ``(d,)``, played ``action``, observed ``reward``.

        Returns False (and changes nothing) when the update would not be finite.
        """
        return self.update_rows(x[None, :], [action], [reward]) == 1

    def update_rows(self, x: FloatArray, actions: Sequence[int], rewards: Sequence[float]) -> int:
        """:meth:`update` for every row of ``x`` ``(B, d)`` in order; returns the rows applied.

        A row whose update would not be finite (an overflow in ``u . A^-1 u`` or in the
        residual) is skipped whole: with both finite every new entry is finite, since
        ``gain (A^-1 u)^T`` is bounded by ``A^-1`` itself.
        """
        if self.kernel is not None and not self.defer:  # the same rounds, one call
            applied: int = self.kernel.ridge_rows(
                np.ascontiguousarray(x, dtype=np.float64),
                np.asarray(actions, dtype=np.int64),
                np.asarray(rewards, dtype=np.float64),
                self.inv_gram, self.weights, self.mix_stats, self.prior, self.mix_rate > 0.0,
            )  # fmt: skip
            return applied
        us = np.ones((x.shape[0], x.shape[1] + 1))  # every row's u = (x, 1), in one copy
        us[:, :-1] = x
        defer, pending, rounds = self.defer, self.pending, self.pending_rounds
        # the eager update's buffer (with ``defer``, a fold makes its own)
        change = np.empty((0, 0) if defer else (us.shape[1], us.shape[1]))
        multiply = np.multiply
        applied = 0
        mixing, stats, dim = self.mix_rate > 0.0, self.mix_stats, self.n_features
        inv_gram, weights = self.inv_gram, self.weights
        den, res = scalar_array(0.0), scalar_array(0.0)
        with np.errstate(all="ignore"):  # overflows are caught below
            for u, action, reward in zip(us, actions, rewards, strict=True):
                inv, w = inv_gram[action], weights[action]
                # ndarray.dot: the BLAS call of ``@`` (the same numbers), for half the overhead
                iu = inv.dot(u)
                kept = int(rounds[action]) if defer else 0
                if kept:  # A^-1 u = inv_gram u - S^T (S u), the rows not folded yet
                    s = pending[action, :kept]
                    iu -= s.dot(u).dot(s)
                denom = 1.0 + float(u.dot(iu))
                residual = reward - float(w.dot(u))
                if not (math.isfinite(denom) and math.isfinite(residual)):
                    continue
                # the scalars as 0-d arrays: numpy's faster operand, the same arithmetic
                den[()], res[()] = denom, residual
                gain = iu / den
                w += gain * res
                if defer:
                    den[()] = math.sqrt(denom)
                    np.divide(iu, den, out=pending[action, kept])
                    rounds[action] = kept + 1
                    if kept + 1 == defer:
                        self._fold(action)
                else:
                    inv -= multiply(gain[:, None], iu, out=change)  # np.outer's very product
                applied += 1
                if mixing and stats[action, 0] < dim:
                    st = stats[action]
                    mean = _mean_reward(self.prior[action], st[0], st[1])
                    st += (1.0, reward, (reward - mean) ** 2 - residual**2)
        return applied

    def _fold(self, action: int) -> None:
        """Fold the rows kept of ``action`` into ``inv_gram`` (``- S^T S``), a block of
        rows of ``inv_gram`` at a time: one pass over it, and each product small enough
        that OpenBLAS runs it on this thread (:data:`FOLD_PRODUCT`)."""
        s = self.pending[action, : int(self.pending_rounds[action])]
        inv, st = self.inv_gram[action], s.T
        rows = max(1, FOLD_PRODUCT // s.size)
        for at in range(0, len(inv), rows):
            block = inv[at : at + rows]
            block -= st[at : at + rows].dot(s)
        s[:] = 0.0
        self.pending_rounds[action] = 0.0

    def mix_weights(self) -> FloatArray:
        """``(K,)``: the weight of the ridge fit in the served prediction of each action."""
        if self.mix_rate == 0.0:
            return np.ones(len(self.weights))
        evidence = float(np.clip(self.mix_rate * self.mix_stats[:, 2].sum(), -_TRUSTED, _TRUSTED))
        out: FloatArray = np.full(len(self.weights), 1.0 / (1.0 + math.exp(-evidence)))
        out[self.mix_stats[:, 0] >= self.n_features] = 1.0
        return out

    def served(self) -> tuple[FloatArray, FloatArray]:
        """``(slopes (K, d), intercepts (K,))`` served: the ridge fit, or its mix (``mix_rate``)."""
        # the reduction itself: ndarray.min adds a Python wrapper (served every update)
        if self.mix_rate == 0.0 or _min(self.mix_stats[:, 0], None) >= self.n_features:
            return self.slopes, self.intercepts
        alpha = self.mix_weights()
        mean = _mean_reward(self.prior, self.mix_stats[:, 0], self.mix_stats[:, 1])
        slopes = self.weights[:, :-1] * alpha[:, None]
        intercepts = alpha * self.weights[:, -1] + (1.0 - alpha) * mean
        return slopes, intercepts

    @property
    def slopes(self) -> FloatArray:
        """``(K, d)``: the linear term of every action (a fresh array)."""
        return self.weights[:, :-1].copy()

    @property
    def intercepts(self) -> FloatArray:
        """``(K,)``: the intercept of every action (a fresh array)."""
        return self.weights[:, -1].copy()


def _mean_reward(
    prior: float | FloatArray, rounds: float | FloatArray, total: float | FloatArray
) -> float | FloatArray:
    """The mean reward the mix weighs the ridge against: ``rounds`` rewards summing to
    ``total``, beside the prior counted as :data:`MIX_MEAN_PRIOR` rounds (per action,
    or for arrays of actions)."""
    return (MIX_MEAN_PRIOR * prior + total) / (MIX_MEAN_PRIOR + rounds)
