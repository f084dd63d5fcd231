"""The readable policy of a boosted model: its online tree, and the weight it is blended at.

A boosted model decides on the ensemble's predicted rewards blended with those of the
online ``dgt`` tree it carries (``options.compete`` and ``blend``, the defaults).  The
ensemble (50 trees refitted from the window) has no single path to read; the online
tree has, and it is one of the two parts every decision reads.  So a context's trace,
the per-leaf statistics, the export and a named explanation show that tree, each with
:meth:`ReadableOnlineTree.blend_state`: which part is shown and the ensemble's weight in
the blend now (0 until the ensemble has been fitted and scored; 1 where it decides alone).
The trace's ``greedy_action``, ``estimates`` and ``probabilities`` stay the model's own,
the blend's; the tree's own are under ``online_tree``.

A boosted model without its online tree (``starter: uniform``, or ``compete`` false
after the first fit) has nothing to read: a trace is refused with a 422 naming
``context``, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.validation import InvalidInput, as_context

if TYPE_CHECKING:
    from collections.abc import Sequence

    from banditree.core.arrays import FloatArray
    from banditree.learners.base import Learner
    from banditree.learners.boosted_options import BoostedOptions
    from banditree.models.boosted.frozen import FrozenBoostedEnsemble

#: what a boosted model's readable views show (``blend_state()["shown"]``)
SHOWN = "online_tree"


class ReadableOnlineTree:
    """:meth:`trace`, :meth:`leaf_stats`, :meth:`input_scaling` and :meth:`blend_state`
    of a :class:`~banditree.learners.boosted.BoostedBandit`, read from its online tree."""

    if TYPE_CHECKING:  # the learner's own, beside this one
        n_features: int
        options: BoostedOptions
        _starter: Learner | None
        _compete: bool
        _ensemble: FrozenBoostedEnsemble | None
        _fits: int

        @property
        def version(self) -> int: ...

        @property
        def ensemble_decides(self) -> bool: ...

        @property
        def deciding_policy(self) -> str: ...

        @property
        def _blends(self) -> bool: ...

        def _ensemble_share(self) -> FloatArray: ...

        def optimistic_scores(self, x: FloatArray) -> tuple[FloatArray, FloatArray]: ...

        def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray: ...

        def predict(self, contexts: FloatArray) -> FloatArray: ...

    @property
    def online_tree(self) -> GradientBandit | None:
        """The online ``dgt`` tree the decisions read (alone, or blended with the
        ensemble), or None where the model has none left."""
        starter = self._starter
        return starter if isinstance(starter, GradientBandit) else None

    def ensemble_weight(self) -> float | list[float]:
        """The ensemble's weight in the predicted rewards a decision reads now: 0 while
        the tree decides alone, 1 where the ensemble does, else the blend's
        ``e_online / (e_online + e_ensemble)`` (each model weighted by the other's
        error; ``optimistic_scores``), one per action under ``blend_weights:
        per_action``."""
        if not self.ensemble_decides or self.deciding_policy == "tree":
            return 0.0
        if self.deciding_policy != "blend" or not self._blends:
            return 1.0
        share = self._ensemble_share()
        return float(share) if share.ndim == 0 else [float(v) for v in share]

    def blend_state(self) -> dict[str, Any] | None:
        """What the readable views show: ``shown`` (``online_tree``), the ensemble's
        ``ensemble_weight`` in the blend now, ``ensemble_decides``, its ``fits`` and
        ``n_trees``; None without an online tree."""
        if self.online_tree is None:
            return None
        ensemble = self._ensemble
        return {
            "shown": SHOWN,
            "ensemble_weight": self.ensemble_weight(),
            "ensemble_decides": self.ensemble_decides,
            "fits": self._fits,
            "n_trees": 0 if ensemble is None else ensemble.n_trees,
        }

    def _readable(self, field: str) -> GradientBandit:
        tree = self.online_tree
        if tree is None:
            raise InvalidInput(
                field,
                "a boosted model without its online tree (options starter uniform, or "
                "compete false) cannot be traced: the ensemble alone decides",
            )
        return tree

    def trace(self, context: Sequence[float] | FloatArray) -> dict[str, Any]:
        """The online tree's path (``trees``) with the model's own decision: the blended
        ``estimates``, ``probabilities`` and ``greedy_action``; the tree's own under
        ``online_tree``, the blend under ``blend``."""
        tree = self._readable("context")
        x = as_context(context, self.n_features)
        out = tree.trace(x)
        own = {k: out.pop(k) for k in ("estimates", "probabilities", "greedy_action")}
        if self.ensemble_decides and self.deciding_policy != "tree":
            out["estimates"] = self.optimistic_scores(x)[0].tolist()
        else:
            out["estimates"] = own["estimates"]
        out["probabilities"] = self.action_probabilities(x).tolist()
        out["greedy_action"] = int(self.predict(x[None, :])[0])
        out["version"] = self.version
        out["online_tree"] = own
        out["blend"] = self.blend_state()
        return out

    def leaf_stats(self) -> dict[str, Any] | None:
        """The online tree's per-leaf statistics: it learns every feedback, so they
        count all the model's traffic, routed by the tree."""
        tree = self.online_tree
        return None if tree is None else tree.leaf_stats()

    def note_unanswered(self, decision: Any) -> None:
        """An expired decision counted at the online tree's leaves."""
        tree = self.online_tree
        if tree is not None:
            tree.note_unanswered(decision)

    def input_scaling(self) -> dict[str, list[float]] | None:
        """The online tree's served standardisation (its splits in the caller's units)."""
        tree = self.online_tree
        return None if tree is None else tree.input_scaling()

    def readable_export(self) -> dict[str, Any]:
        """``online_tree`` (the tree's export) and ``blend`` for the model's export; empty
        without an online tree."""
        tree, blend = self.online_tree, self.blend_state()
        if tree is None or blend is None:
            return {}
        return {"online_tree": tree.export_model(), "blend": blend}
