"""Learning: feedback is checked, buffered and summed into one RMSprop step per window."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.records import Decision, Feedback
from banditree.estimators import OnePointEstimator
from banditree.kernel import native
from banditree.learners.gradient_bandit.base import GradientBase
from banditree.learners.gradient_bandit.kernel_calls import (
    chunk_columns,
    gradients,
    learn_run,
    learns_chunks,
    learns_natively,
)
from banditree.learners.gradient_bandit.upstreams import WindowUpstreams
from banditree.learners.leaf_stats import LeafStats
from banditree.learners.validation import InvalidInput, as_context, check_loss
from banditree.models.spec import Params, UpstreamFn

#: examples buffered before their gradients are summed into the accumulator
_MAX_BUFFERED = 64
#: the first feedbacks a learner gets each apply their update at once, whatever
#: ``accumulate``: a model that knows nothing yet would otherwise decide the next rounds
#: on nothing (on coil2000, a set with no signal, the first rounds cost the most;
#: ``benchmarks/quality/bandit_vs_vw.py``)
EAGER_ROUNDS = 16
#: the parameters the per-action ridge fits (``ModelSpec.fitted_elsewhere``)
RIDGE_FITTED = frozenset({"bias", "linear"})
_add_all = np.add.reduce  # the ufunc method itself: ndarray.sum adds a Python wrapper
#: ``np.isfinite(a).all()`` without ``ndarray.all``'s Python wrapper
_all, _isfinite = np.logical_and.reduce, np.isfinite


class Learning(GradientBase):
    """The learning half: :meth:`learn` queues feedback and applies an update per window."""

    if TYPE_CHECKING:  # the serving half's (``decide.Deciding``)

        def served_rewards(self, x: FloatArray, actions: IntArray) -> FloatArray: ...

    def check(self, decision: Decision, feedback: Feedback) -> None:
        """Raise :class:`InvalidInput` when this feedback cannot be learned from."""
        self._checked_context(decision, feedback)

    def _checked_context(self, decision: Decision, feedback: Feedback) -> FloatArray:
        """:meth:`check`, returning the decision's context as a fresh array."""
        x = as_context(decision.context, self.n_features, "decision.context")
        self._check_rest(decision, feedback)
        return x

    def _check_rest(self, decision: Decision, feedback: Feedback) -> None:
        """The checks of :meth:`check` after the context's (a valid context assumed)."""
        try:
            self.estimator.check_feedback(decision, feedback)
        except ValueError as err:
            raise InvalidInput("feedback", str(err)) from None
        if feedback.loss is not None:
            check_loss(feedback.loss, self.loss_bounds, "loss")
        for i, v in enumerate(feedback.losses or ()):
            check_loss(v, self.loss_bounds, f"losses[{i}]")
        if self.task == "classification":
            # an action that is not an integer (None, a bool, a float) is refused too:
            # buffered, it would fail every later flush or index as a mask
            action = decision.action
            if (
                isinstance(action, bool)
                or not isinstance(action, int | np.integer)
                or not 0 <= action < self.n_actions
            ):
                raise InvalidInput("decision.action", f"must be in [0, {self.n_actions - 1}]")
            if not 0.0 < decision.propensity <= 1.0:
                raise InvalidInput(
                    "decision.propensity", f"must be in (0, 1], got {decision.propensity}"
                )
        if isinstance(self.estimator, OnePointEstimator) and decision.perturbation not in (-1, 1):
            raise InvalidInput("decision.perturbation", "must be -1 or +1 for one-point feedback")

    def _upstreams(self, pairs: Sequence[tuple[Any, Decision, Feedback]]) -> Sequence[UpstreamFn]:
        """The upstreams of the buffered ``(x, decision, feedback)`` examples."""
        if self.task == "classification":
            return WindowUpstreams(
                self.estimator, [d for _, d, _ in pairs], [f for _, _, f in pairs]
            )
        return [self._upstream(d, f) for _, d, f in pairs]

    def _upstream(self, decision: Decision, feedback: Feedback) -> Any:
        est, off, scale = self.estimator, self.target_offset, self.target_scale
        if self.task == "classification":
            return lambda out: est.upstream(out, decision, feedback)
        return lambda out: est.upstream(off + scale * out, decision, feedback) * scale

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Queue the feedback; every ``accumulate``-th one applies one RMSprop step.

        The first :data:`EAGER_ROUNDS` feedbacks each apply their own step.

        Gradients are taken at the current parameters and input statistics, which do
        not change inside an accumulation window, so the window's examples are
        differentiated together in one vectorised call (the same numbers as one call
        per example, a fraction of the Python overhead).  A window whose summed
        gradient is not finite (possible only with absurd finite inputs such as a loss
        of 1e308) is dropped whole, so the model never holds NaN.
        """
        learned = self._learn_checked(self._checked_context(decision, feedback), decision, feedback)
        self._fold_inputs()
        return learned

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn` pair by pair, the contexts converted and checked for finiteness
        in one array: the same operations on the same numbers, so the same state.

        A batch whose contexts do not form one ``(B, n_features)`` array of numbers (a
        ragged or named context) goes pair by pair through :meth:`learn`, as does a pair
        with a non-finite context (``learn`` names the entry it refuses).
        """
        return self._learn_batch(decisions, feedbacks, None, None)

    def learn_batch_served(
        self,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        rows: FloatArray | None = None,
    ) -> tuple[list[bool | ValueError | KeyError | TypeError], FloatArray, list[int]]:
        """:meth:`learn_batch`, and what a learner built on this one scores it by
        (``learners/boosted``): each learned entry's :meth:`served_rewards` of its played
        action just before it was learned (NaN for a refused entry), and the entries
        whose detected change restarted the explorer's schedule, in order.

        ``rows``: the decisions' contexts as one ``(B, n_features)`` array, if made already.
        """
        served = np.full(len(decisions), np.nan)
        drifts: list[int] = []
        out = self._learn_batch(decisions, feedbacks, rows, (served, drifts))
        return out, served, drifts

    def _learn_batch(
        self,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        rows: FloatArray | None,
        scored: tuple[FloatArray, list[int]] | None,
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn_batch`; with ``scored`` ``(served, drifts)``
        :meth:`learn_batch_served`'s, written into them."""
        n = len(decisions)
        if n != len(feedbacks) or type(self).learn is not Learning.learn:  # learn overridden
            return self._learn_pairs(decisions, feedbacks, scored)
        if rows is None:
            try:
                rows = np.array([d.context for d in decisions], dtype=np.float64)
            except (TypeError, ValueError):
                return self._learn_pairs(decisions, feedbacks, scored)
        if rows.shape != (n, self.n_features):
            return self._learn_pairs(decisions, feedbacks, scored)
        finite = cast(list[bool], np.isfinite(rows).all(axis=1).tolist())
        # the compiled kernel learns runs of entries, one call each; the entries it
        # stops at (a refused one, a detected change) and the challenger's phase go
        # through the Python path (_learn_rows), which is their specification
        module = native() if self._native and learns_chunks(self) else None
        columns = None if module is None else chunk_columns(decisions, feedbacks, self.n_actions)
        return self._learn_rows(module, rows, finite, columns, decisions, feedbacks, scored)

    def column_width(self) -> int | None:
        """The contexts' length of :meth:`learn_columns`' rows when the compiled kernel
        learns this learner's chunks, else None (then :meth:`learn_batch` is the way)."""
        if self._native and learns_chunks(self) and type(self).learn is Learning.learn:
            return self.n_features
        return None

    def learn_columns(
        self,
        rows: FloatArray,
        actions: IntArray,
        propensity: FloatArray,
        loss: FloatArray,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        read: Sequence[int] = (),
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn_batch` of ``decisions`` and ``feedbacks`` whose contexts, actions,
        propensities and losses are given as columns (``banditree.kernel.decode_stored``
        reads them from the stored forms): the same state and outcomes, without reading
        a Decision an entry.  ``decisions`` and ``feedbacks`` are read only where the
        Python path learns an entry (one the kernel stops at, the buffer of an open
        window), so they may make each item when asked.  ``read``: the positions whose
        columns are not given (a stored form the kernel does not read): filled here from
        their decision and feedback, as :meth:`learn_batch` fills them.  The arrays are
        the caller's, written here."""
        n = len(actions)
        module = native() if self.column_width() is not None else None
        if module is None or rows.shape != (n, self.n_features):
            return self.learn_batch(list(decisions), list(feedbacks))
        finite = np.ones(n, dtype=bool)
        if read:
            chosen = list(read)
            ds, fs = [decisions[i] for i in chosen], [feedbacks[i] for i in chosen]
            try:
                given = np.array([d.context for d in ds], dtype=np.float64)
            except (TypeError, ValueError):
                given = None
            if given is not None and given.shape == (len(chosen), self.n_features):
                rows[chosen] = given
                finite[chosen] = np.isfinite(given).all(axis=1)
            else:  # not one array of numbers: learn converts each (and names its error)
                finite[chosen] = False
            actions[chosen], propensity[chosen], loss[chosen] = chunk_columns(
                ds, fs, self.n_actions
            )
        # an entry the kernel must not learn gets action -1: the kernel stops there
        actions[~finite | (actions < 0) | (actions >= self.n_actions)] = -1
        return self._learn_rows(
            module, rows, cast(list[bool], finite.tolist()), (actions, propensity, loss),
            decisions, feedbacks, None,
        )  # fmt: skip

    def _learn_rows(
        self,
        module: ModuleType | None,
        rows: FloatArray,
        finite: list[bool],
        columns: tuple[IntArray, FloatArray, FloatArray] | None,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        scored: tuple[FloatArray, list[int]] | None,
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn_batch`'s loop over ``rows`` (``finite``: whether each is), runs of
        entries by the kernel (``module``, with ``columns``), the rest by Python; with
        ``scored`` ``(served, drifts)`` :meth:`learn_batch_served`'s, written into them."""
        n = len(finite)
        served, drifts = (None, None) if scored is None else scored
        out: list[bool | ValueError | KeyError | TypeError] = []
        learn, check, learn_checked = self.learn, self._check_rest, self._learn_checked
        before = self._snapshot
        challenger = self._challenger
        self._in_batch = True
        try:
            i = 0
            while i < n:
                if (
                    module is not None
                    and columns is not None
                    and (challenger is None or challenger.left <= 0)
                ):
                    i = learn_run(
                        module, self, rows, columns, decisions, feedbacks, i, out,
                        (EAGER_ROUNDS, _MAX_BUFFERED), served,
                    )  # fmt: skip
                    if i >= n:
                        break
                x, ok, decision, feedback = rows[i], finite[i], decisions[i], feedbacks[i]
                i += 1
                try:
                    if ok:  # as_context would accept it: the same array, the checks after it
                        check(decision, feedback)
                        if served is None or drifts is None:
                            out.append(learn_checked(x, decision, feedback))
                            continue
                        served[i - 1] = self._served_one(x, decision)
                        origin = self._explore_origin
                        out.append(learn_checked(x, decision, feedback))
                        if self._explore_origin != origin:
                            drifts.append(i - 1)
                    else:
                        out.append(learn(decision, feedback))
                except (ValueError, KeyError, TypeError) as err:
                    out.append(err)
        finally:
            self._in_batch = False
            self._fold_inputs()
            snap = self._snapshot
            if snap is not before:  # the one version left to serve: prepared as learn's
                frozen = self.model.prepare(snap.frozen)
                if frozen is not snap.frozen:
                    self._snapshot = replace(snap, frozen=frozen)
        return out

    def _learn_pairs(
        self,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        scored: tuple[FloatArray, list[int]] | None,
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """The pairs one by one through :meth:`learn` (``scored``: its steps, each entry's
        served reward and change recorded as :meth:`learn_batch_served` records them)."""
        if scored is None:
            return super().learn_batch(decisions, feedbacks)
        served, drifts = scored
        out: list[bool | ValueError | KeyError | TypeError] = []
        for i, (decision, feedback) in enumerate(zip(decisions, feedbacks, strict=True)):
            try:
                x = self._checked_context(decision, feedback)  # learn's checks, first
                served[i] = self._served_one(x, decision)
                origin = self._explore_origin
                out.append(self.learn(decision, feedback))
                if self._explore_origin != origin:
                    drifts.append(i)
            except (ValueError, KeyError, TypeError) as err:
                out.append(err)
        return out

    def _served_one(self, x: FloatArray, decision: Decision) -> float:
        """:meth:`served_rewards` of one checked entry's context and played action."""
        action = np.array([cast(int, decision.action)], dtype=np.int64)
        return float(self.served_rewards(x.reshape(1, -1), action)[0])

    def _learn_checked(self, x: FloatArray, decision: Decision, feedback: Feedback) -> bool:
        """:meth:`learn` after the checks: ``x`` the decision's context as an array (kept)."""
        if self.standardize:
            if self._standardizer.kernel is not None:
                self._input_rows.append(x)  # folded in one kernel call (_fold_inputs)
            else:
                self._standardizer.update(x)
        self._buffer.append((x, decision, feedback))
        self._pending += 1
        self._count_feedback(feedback)
        if self._detector is not None and feedback.loss is not None:
            if self._detector.update(feedback.loss):
                self._detector.locate(
                    event_id=decision.event_id,
                    feedback=self._n_learned,
                    version=self._snapshot.version,
                )
                self._on_drift()
        if self._pending < self.accumulate and self._n_learned > EAGER_ROUNDS:
            if len(self._buffer) >= _MAX_BUFFERED:
                self._flush()
            return False
        self._flush()
        grads, finite, window = self._accum, self._accum_finite, self._pending
        self._accum, self._accum_finite, self._pending = {}, True, 0
        if not finite:
            self._refused += window
            return False
        ridge = self._ridge
        if ridge is not None and not RIDGE_FITTED.isdisjoint(grads):  # a model that
            # still gave them (not every one honours ``fitted_elsewhere``): fitted by
            # ridge regression in _flush, not by gradient
            grads = {k: v for k, v in grads.items() if k not in RIDGE_FITTED}
        if self.learning_rate_decay is not None:
            decay = 1.0 / (1.0 + self._n_learned / self.learning_rate_decay)
            self._optimizer.lr = self.learning_rate * max(decay, self.learning_rate_floor)
        new = self._optimizer.step(self._params, grads)
        if ridge is not None:
            self._serve_ridge(new)
        old = self._params  # a parameter the step left as it was is known to be finite
        if not all(p is old.get(k) or _all(_isfinite(p), None) for k, p in new.items()):
            self._refused += window
            return False  # never let a model hold NaN: drop the step
        self._params = new
        self._snapshot = self._make_snapshot(self._snapshot.version + 1)
        return True

    def _on_drift(self) -> None:
        """A detected rise of the loss: the explorer's schedule and the ridge start afresh.

        The ridge forgets every round (its prior, the intercept ``1/K``, comes back; the
        fit is served from the next update on).  The tree keeps its splits and learns
        on, its leaf values multiplied by ``leaf_shrink``: after a change they say
        which action paid where before, and a leaf that keeps its whole old answer
        needs as many rounds to unlearn it as it took to learn (served from the next
        update on, as the ridge).
        """
        self._explore_origin = self._n_learned
        theta = self._params.get("theta")
        if theta is not None and self.leaf_shrink != 1.0:
            self._params = {**self._params, "theta": theta * self.leaf_shrink}
        ridge = self._ridge
        if ridge is not None:
            ridge.restart(np.zeros((self.n_actions, self.n_features)), ridge.prior.copy())
            if self._challenger is not None:
                self._challenger.start(ridge)

    def _serve_ridge(self, params: Params) -> None:
        """Set ``params``' bias and linear term to what the ridge serves."""
        assert self._ridge is not None
        slopes, intercepts = self._ridge.served()
        params.update(bias=intercepts, linear=slopes)

    def _count_leaves(
        self,
        stats: LeafStats,
        x: FloatArray,
        pairs: Sequence[tuple[Any, Decision, Feedback | None]],
    ) -> None:
        """Count the examples ``pairs`` (standardised rows ``x``) at the leaves the served
        snapshot routes them to; a feedback of None counts a decision only."""
        leaves = self.model.leaves_batch(self._snapshot.frozen, x)
        actions = (
            np.array([d.action for _, d, _ in pairs], dtype=np.int64)
            if self.task == "classification"
            else None
        )
        losses = [_loss(f) for _, _, f in pairs if f is not None]
        if len(losses) != len(pairs):  # decisions without feedback (counted alone)
            stats.count(leaves, actions=actions, losses=None)
            return
        stats.count(leaves, actions=actions, losses=np.array(losses))

    def note_unanswered(self, decision: Decision) -> None:
        """Count a decision that got no feedback (it expired with no default loss) at
        the leaves the served snapshot routes its context to."""
        stats = self._leaf_stats
        if stats is None:
            return
        x = as_context(decision.context, self.n_features, "decision.context")
        if self.task == "classification" and not (
            decision.action is not None and 0 <= decision.action < self.n_actions
        ):
            raise InvalidInput("decision.action", f"must be in [0, {self.n_actions - 1}]")
        z = self._standardized(x[None, :], self._snapshot)
        self._count_leaves(stats, z, [(x, decision, None)])

    def leaf_stats(self) -> dict[str, Any] | None:
        """Per leaf of each tree: decisions, feedbacks, mean loss, traffic share and
        (classification) per-action counts, of every feedback learned so far
        (:class:`~banditree.learners.leaf_stats.LeafStats`); None for a model without
        leaves.  Feedback queued for the current window is counted as it will be."""
        stats = self._leaf_stats
        if stats is None:
            return None
        if self._buffer:
            stats = stats.copy()
            x = self._standardized(np.array([b[0] for b in self._buffer]), self._snapshot)
            self._count_leaves(stats, x, self._buffer)
        return stats.to_json()

    def _flush(self) -> None:
        """Add the buffered examples' gradients into the accumulator."""
        if not self._buffer:
            return
        snap = self._snapshot
        # the gradient of the function now served: current parameters AND the input
        # statistics of the current snapshot (both change only with an update)
        x = self._standardized(np.array([b[0] for b in self._buffer]), snap)
        if self._leaf_stats is not None:
            self._count_leaves(self._leaf_stats, x, self._buffer)
        module = native() if self._native and learns_natively(self) else None
        upstreams = self._upstreams(self._buffer) if module is None else []
        wrapped = self._clip.wrap(upstreams) if self._clip is not None else None
        if self._ridge is not None:
            actions = [cast(int, d.action) for _, d, _ in self._buffer]
            rewards = [1.0 - cast(float, f.loss) for _, _, f in self._buffer]
            if self._challenger is not None:
                self._challenger.update_rows(self._ridge, x, actions, rewards)
            else:
                self._ridge.update_rows(x, actions, rewards)
        if module is not None:  # the compiled kernel: the same gradients, one call
            grads = gradients(module, self, x, self._buffer)
        else:
            grads = self.model.gradients_batch(self._params, x, wrapped or upstreams, self._rng)
        self._buffer = []
        if wrapped is not None:
            assert self._clip is not None
            self._clip.record(wrapped)
        # a sum is finite only if every term is (an overflowing sum counts as not finite)
        if not math.isfinite(sum([float(_add_all(g, None)) for g in grads.values()])):
            self._accum_finite = False
        accum = self._accum
        for name, g in grads.items():
            acc = accum.get(name)
            if acc is None:
                accum[name] = g  # a fresh array from gradients_batch(): the learner owns it
            else:
                acc += g


def _loss(feedback: Feedback) -> float:
    """The loss a feedback counts at its leaf (the mean of a two-point pair's)."""
    if feedback.loss is not None:
        return float(feedback.loss)
    if feedback.losses is not None:
        return 0.5 * (feedback.losses[0] + feedback.losses[1])
    return 0.0
