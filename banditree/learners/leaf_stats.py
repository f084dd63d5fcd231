"""Per-leaf traffic, loss and action counts: learner state, counted in log order.

Every learned feedback is routed through the served snapshot it is learned under, in
every tree of the model, and counted at the leaf it reaches: one decision, one
feedback, its loss, its action.  A decision that expired without a loss (nothing to
learn) is counted as a decision only (:meth:`LeafStats.count` with ``losses`` None).
The counts are saved with the learner's other tensors and, being made by the learn
path itself, a replay of the log rebuilds them exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

#: prefix of the counts in a checkpoint's tensors
PREFIX = "leaf_stats."
_NAMES = ("decisions", "feedbacks", "loss_sum", "action_counts")


class LeafStats:
    """Counts per leaf of each of ``n_trees`` trees of ``n_leaves`` leaves.

    ``n_actions`` is 0 for regression (no action counts).  Counts are held as float64
    arrays (exact integers up to 2**53), so they travel as checkpoint tensors.

    Examples
    --------
    >>> stats = LeafStats(n_trees=1, n_leaves=4, n_actions=2)
    >>> stats.count(np.array([[1, 1, 3]]), actions=np.array([0, 1, 1]),
    ...             losses=np.array([0.0, 1.0, 0.5]))
    >>> [leaf["decisions"] for leaf in stats.to_json()["trees"][0]["leaves"]]
    [0, 2, 0, 1]
    >>> stats.to_json()["trees"][0]["leaves"][1]["mean_loss"]
    0.5
    """

    def __init__(self, n_trees: int, n_leaves: int, n_actions: int) -> None:
        self.n_trees, self.n_leaves, self.n_actions = n_trees, n_leaves, n_actions
        self.reset()

    def reset(self) -> None:
        """Every count back to 0."""
        shape = (self.n_trees, self.n_leaves)
        self.decisions = np.zeros(shape)
        self.feedbacks = np.zeros(shape)
        self.loss_sum = np.zeros(shape)
        self.action_counts = np.zeros((*shape, max(self.n_actions, 1)))

    def copy(self) -> LeafStats:
        out = LeafStats(self.n_trees, self.n_leaves, self.n_actions)
        for name in _NAMES:
            setattr(out, name, getattr(self, name).copy())
        return out

    def count(
        self,
        leaves: IntArray,
        *,
        actions: IntArray | None,
        losses: FloatArray | None,
    ) -> None:
        """Count a batch: ``leaves`` ``(T, B)`` the leaf each example reached in each tree,
        ``actions`` ``(B,)`` (None: regression), ``losses`` ``(B,)`` (None: decisions
        that got no feedback)."""
        n_trees, batch = leaves.shape
        if n_trees != self.n_trees:
            raise ValueError(f"leaves are of {n_trees} trees, not {self.n_trees}")
        if not batch:
            return
        trees = np.repeat(np.arange(n_trees), batch)
        flat = leaves.reshape(-1)
        np.add.at(self.decisions, (trees, flat), 1.0)
        if losses is not None:
            np.add.at(self.feedbacks, (trees, flat), 1.0)
            np.add.at(self.loss_sum, (trees, flat), np.tile(losses, n_trees))
        if actions is not None and self.n_actions:
            np.add.at(self.action_counts, (trees, flat, np.tile(actions, n_trees)), 1.0)

    # -- checkpoints ---------------------------------------------------------------------
    def tensors(self) -> dict[str, FloatArray]:
        """The counts as checkpoint tensors (names under :data:`PREFIX`)."""
        return {PREFIX + name: getattr(self, name).copy() for name in _NAMES}

    def load_tensors(self, tensors: dict[str, np.ndarray]) -> None:
        """Restore :meth:`tensors`; a checkpoint written before the counts starts them at 0."""
        if PREFIX + "decisions" not in tensors:
            self.reset()
            return
        for name in _NAMES:
            value = np.array(tensors[PREFIX + name], dtype=np.float64)
            if value.shape != getattr(self, name).shape or not np.isfinite(value).all():
                raise ValueError(f"checkpoint {PREFIX}{name} does not match the model")
            setattr(self, name, value)

    # -- what it reports -----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """``{"trees": [{"leaves": [...]}]}``: per leaf ``decisions``, ``feedbacks``,
        ``mean_loss`` (None before any feedback), ``share`` (of the tree's decisions)
        and, for classification, ``action_counts``."""
        trees = []
        for t in range(self.n_trees):
            total = float(self.decisions[t].sum())
            leaves = []
            for j in range(self.n_leaves):
                n, m = int(self.decisions[t, j]), int(self.feedbacks[t, j])
                leaf: dict[str, Any] = {
                    "leaf": j,
                    "decisions": n,
                    "feedbacks": m,
                    "mean_loss": float(self.loss_sum[t, j]) / m if m else None,
                    "share": n / total if total else 0.0,
                }
                if self.n_actions:
                    leaf["action_counts"] = [int(v) for v in self.action_counts[t, j]]
                leaves.append(leaf)
            trees.append({"tree": t, "decisions": int(total), "leaves": leaves})
        return {"n_trees": self.n_trees, "n_leaves": self.n_leaves, "trees": trees}
