"""The learner contract: ``act(context) -> Decision`` and ``learn(decision, feedback)``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.learners.counted_loss import warmup_sum, winsorise_loss
from banditree.learners.validation import InvalidInput, as_contexts


class DefaultTaker(Protocol):
    """A learner that takes the caller's default actions (apprentice mode): it plays them
    while its ``mode`` is ``"apprentice"`` and ignores them once ``"online"``."""

    @property
    def mode(self) -> str: ...

    def act(
        self,
        context: Sequence[float] | FloatArray,
        event_id: str | None = None,
        default_action: int | None = None,
    ) -> Decision: ...

    def act_columns(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
        default_actions: Sequence[int] | None = None,
    ) -> DecisionColumns: ...


class Explainer(Protocol):
    """A learner that names the conditions of a context's leaf path (named features)."""

    def explain(self, context: Mapping[str, Any]) -> list[str]: ...


Tensors = dict[str, np.ndarray]


class Learner(ABC):
    """A bandit policy that decides and learns online.

    Public methods do the shared bookkeeping; subclasses write the hooks.
    ``state()`` / ``from_state()`` round-trip everything needed to resume: the
    restored learner makes the same next decisions and the same next updates.
    """

    task: str
    n_features: int
    n_actions: int
    seed: int
    _config: dict[str, Any]
    #: bookkeeping shared by every learner (see :meth:`_count_feedback`, :attr:`counters`)
    _n_decisions: int = 0
    _n_learned: int = 0
    _loss_sum: float = 0.0
    #: regression: the running scale of the counted losses, and the first raw ones
    #: while it is set (:mod:`banditree.learners.counted_loss`)
    _loss_scale: float = 0.0
    _loss_warmup: tuple[float, ...] = ()

    @abstractmethod
    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        """Decide for one context; the decision carries its propensity and model version."""

    def act_batch(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
    ) -> list[Decision]:
        """Decide for every context of a batch ``(B, d)``: the decisions of ``act`` row by row.

        ``event_ids`` (one per context, None for a generated one) works as ``act``'s
        ``event_id``.  The whole batch is validated before any decision is made.  This
        default calls :meth:`act` per row; learners override it with one batched pass
        that returns the same decisions.
        """
        x = as_contexts(contexts, self.n_features)
        ids = self._check_event_ids(event_ids, x.shape[0])
        return [self.act(row, event_id) for row, event_id in zip(x, ids, strict=True)]

    def act_columns(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
    ) -> DecisionColumns:
        """:meth:`act_batch` held column by column (what a service writes out).

        This default takes the columns of :meth:`act_batch`; learners with a batched
        pass build the columns directly and make ``act_batch`` their rows.
        """
        return DecisionColumns.from_decisions(self.act_batch(contexts, event_ids))

    @property
    def batch_exact(self) -> bool:
        """:meth:`act_columns` makes the decisions of :meth:`act` row by row, the same
        numbers (False where a batched pass rounds apart: they agree only closely)."""
        return False

    @abstractmethod
    def check(self, decision: Decision, feedback: Feedback) -> None:
        """Raise :class:`~banditree.learners.InvalidInput` when ``learn`` would refuse this feedback.

        Callers that apply feedback later (the service) call this first, so that a bad
        request is refused at once and an accepted one is never lost.
        """

    @abstractmethod
    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Learn from the feedback of a stored decision; True when the parameters changed."""

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn` for each pair in order: True / False as ``learn`` answers, or the
        error ``learn`` raised for a pair it refused (the learner left as ``learn`` left it).

        The state after a batch is exactly that after ``learn`` called pair by pair,
        refused pairs included (a log replayed in batches learns what it learns one by
        one).  This default calls :meth:`learn` per pair; learners override it to spend
        less per pair.
        """
        out: list[bool | ValueError | KeyError | TypeError] = []
        for decision, feedback in zip(decisions, feedbacks, strict=True):
            try:
                out.append(self.learn(decision, feedback))
            except (ValueError, KeyError, TypeError) as err:
                out.append(err)
        return out

    def column_width(self) -> int | None:
        """The contexts' length of the rows :meth:`learn_columns` takes where this learner
        learns from columns; None (this default) where :meth:`learn_batch` is the way."""
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
        """:meth:`learn_batch` of pairs whose contexts, actions, propensities and losses
        come as columns too (a learner whose :meth:`column_width` is set reads those and
        not the pairs); this default learns the pairs."""
        return self.learn_batch(list(decisions), list(feedbacks))

    @abstractmethod
    def predict(self, contexts: FloatArray) -> FloatArray:
        """Greedy actions (classification) or values (regression) for a batch ``(B, d)``."""

    @property
    @abstractmethod
    def version(self) -> int:
        """Number of parameter updates applied so far."""

    @abstractmethod
    def state(self) -> tuple[Tensors, dict[str, Any]]:
        """Tensors and JSON metadata that restore this learner exactly."""

    @abstractmethod
    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        """Restore the state written by :meth:`state` into a learner of the same config."""

    def prepare_to_learn(self) -> None:  # noqa: B027 - a no-op hook
        """Called when a service's learner takes this model, before its log is learned:
        load what learning needs and serving does not (a boosted model's LightGBM)."""

    def note_unanswered(self, decision: Decision) -> None:  # noqa: B027 - a no-op hook
        """Count a decision of the log that got no feedback (it expired with no default
        loss) in the per-leaf statistics; learners without them ignore it."""

    def leaf_stats(self) -> dict[str, Any] | None:
        """Per leaf of each tree: decisions, feedbacks, mean loss and per-action counts,
        counted in log order (:mod:`banditree.learners.leaf_stats`); None for a model
        without leaves."""
        return None

    def drift_events(self) -> list[dict[str, Any]]:
        """The change detector's newest signals, oldest first, each with ``signal`` (its
        number), ``test``, ``rounds``, ``event_id``, ``feedback`` and ``version`` (see
        :class:`~banditree.learners.drift.LossRiseDetector`); none without a detector."""
        return []

    def trace(self, context: Any) -> dict[str, Any]:
        """What the served model does with ``context`` without deciding: each tree's
        path and leaf, the greedy answer, the probabilities (gradient-learned models)."""
        raise InvalidInput(
            "context", f"a {self._config.get('kind', 'model')} model cannot be traced"
        )

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        """Per tree and leaf, the explorer's probabilities on the leaf's own values
        (classification with one tree); None otherwise."""
        return None

    def blend_state(self) -> dict[str, Any] | None:
        """Where the tree that :meth:`trace`, :meth:`leaf_stats` and the export show is
        one part of a blended policy (a boosted model's online tree): ``shown`` and the
        other part's ``ensemble_weight`` now (:mod:`banditree.learners.boosted.readable`);
        None where the trees shown are the whole policy."""
        return None

    def input_scaling(self) -> dict[str, list[float]] | None:
        """The served standardisation (``mean``, ``scale``) of numeric contexts, or None."""
        return None

    def export_model(self) -> dict[str, Any]:
        """The served model as JSON (the hard tree for tree models)."""
        return {"kind": "none"}

    def config(self) -> dict[str, Any]:
        """The JSON-ready configuration :func:`banditree.learners.build_learner` rebuilds from."""
        return dict(self._config)

    # -- capabilities: what a caller may ask of this learner, instead of its class ------

    @property
    def apprentice(self) -> DefaultTaker | None:
        """This learner when it takes the caller's default actions (apprentice mode: an
        :class:`~banditree.learners.apprentice.Apprentice`), else None."""
        return None

    @property
    def explainer(self) -> Explainer | None:
        """This learner when it can :meth:`~Explainer.explain` a context's decision as
        conditions on named features, else None."""
        return None

    # -- bookkeeping shared by every learner ----------------------------------------
    def _next_event_id(self, event_id: str | None) -> str:
        """``event_id``, or a deterministic one from the seed and the decision count."""
        if event_id is None:
            event_id = f"{self.seed:x}-{self._n_decisions:x}"
        self._n_decisions += 1
        return event_id

    @staticmethod
    def _check_event_ids(
        event_ids: Sequence[str | None] | None, batch: int
    ) -> Sequence[str | None]:
        """One event id (or None) per context of a batch of ``batch``."""
        if event_ids is None:
            return [None] * batch
        if isinstance(event_ids, str) or len(event_ids) != batch:
            raise InvalidInput("event_ids", f"must hold exactly {batch} ids, one per context")
        return event_ids

    def _next_event_ids(self, event_ids: Sequence[str | None] | None, batch: int) -> list[str]:
        """:meth:`_next_event_id` for every context of a batch, in order."""
        given = self._check_event_ids(event_ids, batch)
        start = self._n_decisions
        self._n_decisions += batch
        seed = f"{self.seed:x}"
        return [
            f"{seed}-{start + i:x}" if event_id is None else event_id
            for i, event_id in enumerate(given)
        ]

    def _count_feedback(self, feedback: Feedback) -> None:
        """Count learned feedback and its loss (the mean of a two-point pair).

        Regression losses have no bound, so each one is counted winsorised
        (:func:`winsorise_loss`); classification and ranking losses are counted as they are.
        """
        self._n_learned += 1
        if feedback.loss is not None:
            loss = float(feedback.loss)
        elif feedback.losses is not None:
            loss = 0.5 * (feedback.losses[0] + feedback.losses[1])
        else:
            return
        if self.task != "regression":
            self._loss_sum += loss
            return
        self._loss_sum, self._loss_scale, self._loss_warmup = winsorise_loss(
            loss, self._loss_sum, self._loss_scale, self._loss_warmup
        )

    @property
    def counters(self) -> dict[str, float]:
        n = self._n_learned
        total = self._loss_sum + warmup_sum(self._loss_warmup)
        return {
            "decisions": self._n_decisions,
            "feedback": n,
            "updates": self.version,
            "progressive_mean_loss": total / n if n else float("nan"),
        }

    def _counter_state(self) -> dict[str, Any]:
        return {
            "n_decisions": self._n_decisions,
            "n_learned": self._n_learned,
            "loss_sum": self._loss_sum,
            "loss_scale": self._loss_scale,
            "loss_warmup": list(self._loss_warmup),
        }

    def _load_counter_state(self, meta: dict[str, Any]) -> None:
        self._n_decisions = int(meta["n_decisions"])
        self._n_learned = int(meta["n_learned"])
        self._loss_sum = float(meta["loss_sum"])
        # absent from checkpoints written before the winsorised count: it starts afresh
        self._loss_scale = float(meta.get("loss_scale", 0.0))
        self._loss_warmup = tuple(float(v) for v in meta.get("loss_warmup", ()))
