"""Introspection of the served policy: a context's path, the leaves' own probabilities.

What a person reading the policy asks of it (the console's Trace and Policy pages), read
from the served snapshot without deciding: no event id is drawn, nothing is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.learners.gradient_bandit.base import GradientBase
from banditree.learners.validation import as_context


def leaf_path(leaf: int, height: int) -> list[int]:
    """Node ids from the root to ``leaf``'s own id (``2**h - 1 + leaf``), breadth-first ids."""
    node = (1 << height) - 1 + leaf
    path = [node]
    while node:
        node = (node - 1) // 2
        path.append(node)
    return path[::-1]


class Introspecting(GradientBase):
    """:meth:`trace` and :meth:`leaf_probabilities` over the served snapshot."""

    if TYPE_CHECKING:  # the serving half's (:class:`~.decide.Deciding`), beside this one

        def reward_estimates(self, context: Sequence[float] | FloatArray) -> FloatArray: ...

        def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray: ...

    def trace(self, context: Sequence[float] | FloatArray) -> dict[str, Any]:
        """What the served snapshot does with ``context``, without deciding.

        ``trees``: per tree the reached ``leaf`` and its ``path`` (node ids, root first;
        empty for a model without leaves); classification: ``greedy_action``,
        ``estimates`` (predicted reward per action) and ``probabilities`` (the pmf
        ``act`` samples from); regression: ``greedy_value``.
        """
        x = as_context(context, self.n_features)
        snap = self._snapshot
        z = self._standardized(x[None, :], snap)
        out: dict[str, Any] = {"version": snap.version, "trees": []}
        layout = self.model.leaf_layout()
        if layout is not None:
            height = layout[1].bit_length() - 1
            leaves = self.model.leaves_batch(snap.frozen, z)[:, 0].tolist()
            out["trees"] = [{"leaf": j, "path": leaf_path(j, height)} for j in leaves]
        if self.task == "classification":
            estimates = self.reward_estimates(x)
            out["estimates"] = estimates.tolist()
            out["probabilities"] = self.action_probabilities(x).tolist()
            out["greedy_action"] = int(self.predict(x[None, :])[0])
        else:
            out["greedy_value"] = float(self.predict(x[None, :])[0])
        return out

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        """Classification with one tree: per leaf the explorer's probabilities on the
        leaf's own values (a context at the mean, where a linear term adds nothing),
        as ``[tree][leaf][action]``; None otherwise."""
        layout = self.model.leaf_layout()
        if self.task != "classification" or layout is None or layout[0] != 1:
            return None
        assert self.explorer is not None
        theta: FloatArray = self._snapshot.frozen.theta  # (2**h, K), the shared bias folded in
        rewards = 1.0 / (1.0 + np.exp(-theta)) if self.reward_link == "sigmoid" else theta
        rounds = self._explore_rounds
        return [[self.explorer(row, rounds).tolist() for row in rewards]]

    def input_scaling(self) -> dict[str, list[float]]:
        """``mean`` and ``scale`` of the served standardisation: a split ``w . z + b > 0``
        on ``z = (x - mean) / scale`` reads ``sum_j w_j / scale_j x_j > ...`` in the
        caller's units (exact where no value is clipped)."""
        snap = self._snapshot
        return {"mean": snap.mean.tolist(), "scale": (1.0 / snap.inv_scale).tolist()}
