"""Deciding: one context or a batch -> decisions, predictions, the explorer's probabilities."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision
from banditree.estimators import OnePointEstimator, TwoPointEstimator
from banditree.explore import event_uniform_rows, event_uniforms, explore_and_sample
from banditree.kernel import event_uniform_rows as kernel_uniform_rows
from banditree.kernel import native
from banditree.learners.batch_decisions import classification_columns
from banditree.learners.gradient_bandit.base import GradientBase, clip_in_place
from banditree.learners.gradient_bandit.kernel_calls import (
    decide_columns,
    decide_one,
    served_values,
)
from banditree.learners.validation import as_context, as_contexts, context_values

_subtract, _multiply = np.subtract, np.multiply


def _sigmoid(z: FloatArray) -> FloatArray:
    """``1 / (1 + exp(-z))``, the same operations in place on one fresh array."""
    out: FloatArray = np.negative(z)
    np.exp(out, out=out)
    out += 1.0
    np.divide(1.0, out, out=out)
    return out


class Deciding(GradientBase):
    """The serving half: every decision reads the current immutable snapshot."""

    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        x, values = context_values(context, self.n_features)
        snap = self._snapshot
        module = native() if self._native else None
        if module is not None:  # the compiled kernel, where it covers this learner
            event_id = self._next_event_id(event_id)
            one = decide_one(module, self, x, event_id, snap)
            if one is not None:
                return self._decision(event_id, values, snap.version, one)
            # not covered: the numpy path below, with this event id
        # in place: x is a fresh copy, the decision records ``values`` (the ufuncs
        # themselves: the operators add a Python-level dispatch per call)
        _subtract(x, snap.mean, out=x)
        _multiply(x, snap.inv_scale, out=x)
        if self.context_clip is not None:
            clip_in_place(x, self.context_clip)
        out = self.model.forward(snap.frozen, x)
        if module is None:
            event_id = self._next_event_id(event_id)
        assert event_id is not None
        u_action, u_sign = event_uniforms(self.seed, event_id)
        if self.task == "classification":
            assert self.explorer is not None
            scores = out.scores
            if scores is None:
                scores = _sigmoid(out.output) if self.reward_link == "sigmoid" else out.output
            action, propensity, greedy = explore_and_sample(
                self.explorer, scores, self._explore_rounds, u_action
            )
            return Decision.of_action(
                event_id,
                tuple(values),
                snap.version,
                action,
                propensity,
                greedy,
                out.leaf,
                out.extras,
            )
        return self._regression_decision(
            event_id, values, snap.version, float(out.output[0]), out.leaf, u_sign, out.extras
        )

    def _decision(
        self,
        event_id: str,
        values: list[float],
        version: int,
        one: tuple[int, float, int, int | None, FloatArray, float, dict[str, float]],
    ) -> Decision:
        """:meth:`act`'s decision from the kernel's numbers (:func:`decide_one`)."""
        action, propensity, greedy, leaf, output, u_sign, extras = one
        if self.task == "classification":
            return Decision.of_action(
                event_id, tuple(values), version, action, propensity, greedy, leaf, extras
            )
        return self._regression_decision(
            event_id, values, version, float(output[0]), leaf, u_sign, extras
        )

    def _regression_decision(
        self,
        event_id: str,
        values: list[float],
        version: int,
        output: float,
        leaf: int | None,
        u_sign: float,
        extras: dict[str, float],
    ) -> Decision:
        """A regression decision from the model's output: the value to play (perturbed
        by the event's sign for one-point) or the two probes."""
        y_hat = self.target_offset + self.target_scale * output
        value, perturbation, probes = y_hat, 0, None
        if isinstance(self.estimator, OnePointEstimator):
            perturbation = 1 if u_sign < 0.5 else -1
            value = y_hat + self.estimator.delta * perturbation
        elif isinstance(self.estimator, TwoPointEstimator):
            probes = (y_hat + self.estimator.delta, y_hat - self.estimator.delta)
        return Decision(
            event_id,
            tuple(values),
            version,
            value=value,
            greedy_value=y_hat,
            perturbation=perturbation,
            probes=probes,
            leaf=leaf,
            explored=perturbation != 0 or probes is not None,
            extras=extras,
        )

    @property
    def batch_exact(self) -> bool:
        return self.model.rows_exact

    def act_columns(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
    ) -> DecisionColumns:
        """:meth:`act` for every context of a batch ``(B, d)``, in one batched pass.

        One standardisation, one batched model forward, one explorer call and one
        vectorised draw: the decisions (event ids, actions, propensities, values)
        are those of :meth:`act` called row by row on the same snapshot.
        """
        x = as_contexts(contexts, self.n_features)
        ids = self._next_event_ids(event_ids, x.shape[0])
        if not ids:
            return DecisionColumns([], [], self._snapshot.version, [])
        snap = self._snapshot
        module = native() if self._native else None
        if module is not None:  # the compiled kernel, where it covers this learner
            uniforms = kernel_uniform_rows(module, self.seed, ids)
            columns = decide_columns(module, self, x, ids, uniforms, snap, contexts)
            if columns is not None:
                return columns
        else:
            uniforms = event_uniform_rows(self.seed, ids)
        out = self.model.forward_rows(snap.frozen, self._standardized(x, snap))
        if self.task == "classification":
            assert self.explorer is not None
            return classification_columns(
                out,
                x,
                ids,
                uniforms,
                version=snap.version,
                explorer=self.explorer,
                rounds_learned=self._explore_rounds,
                sigmoid_link=self.reward_link == "sigmoid",
                given=contexts,
            )
        return self._regression_columns(out, x, ids, uniforms, snap.version, contexts)

    def act_batch(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
    ) -> list[Decision]:
        """The decisions of :meth:`act_columns`, row by row."""
        return self.act_columns(contexts, event_ids).rows()

    def predict(self, contexts: FloatArray) -> FloatArray:
        snap = self._snapshot
        x = np.asarray(contexts, dtype=np.float64)
        out = self.model.forward_batch(snap.frozen, self._standardized(x, snap))
        if self.task == "classification":
            result: FloatArray = np.argmax(out, axis=1)
            return result
        return self.target_offset + self.target_scale * out[:, 0]

    def reward_estimates(self, context: Sequence[float] | FloatArray) -> FloatArray:
        """Classification: the predicted reward of every action ``(K,)`` (what ``act`` explores on)."""
        if self.task != "classification":
            raise ValueError("reward_estimates is for classification learners")
        snap = self._snapshot
        x = as_context(context, self.n_features)
        out = self.model.forward(snap.frozen, self._standardized(x, snap))
        if out.scores is not None:
            return out.scores
        return _sigmoid(out.output) if self.reward_link == "sigmoid" else out.output

    def served_rewards(self, x: FloatArray, actions: IntArray) -> FloatArray:
        """Classification: the served snapshot's predicted reward of each row's action
        ``(B,)`` for finite contexts ``x`` ``(B, d)`` and ``actions`` ``(B,)`` int64.

        A single tree on the compiled kernel: ``decide``'s scores, the numbers
        ``learn_batch``'s kernel records for each entry it learns
        (:meth:`~banditree.learners.gradient_bandit.learn.Learning.learn_batch_served`);
        otherwise :meth:`reward_estimates`' (they differ in the last bits: the kernel
        adds each dot product in index order).
        """
        module = native() if self._native else None
        if module is not None:
            values = served_values(module, self, x, actions)
            if values is not None:
                return values
        return np.array(
            [self.reward_estimates(row)[a] for row, a in zip(x, actions.tolist(), strict=True)],
            dtype=np.float64,
        )

    def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray:
        """Classification: the probability ``act`` plays each action for ``context`` ``(K,)``."""
        assert self.explorer is not None, "action_probabilities is for classification learners"
        return self.explorer(self.reward_estimates(context), self._explore_rounds)
