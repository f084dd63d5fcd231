"""Apprentice mode: play the caller's default action, learn from its feedback, report agreement.

A model in apprentice mode answers every decision with the caller's ``default_action``
(probability 1, so its feedback is an on-policy sample of the default rule) and learns
from that feedback like any bandit learner.  Meanwhile it tracks how often its own
greedy choice agrees with the default and its own estimate of the reward of both, so
an operator can see when it has learned enough to decide.  :meth:`Apprentice.set_mode`
``("online")`` hands it the decisions, keeping everything it learned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Protocol, cast

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.learners.base import Learner, Tensors
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.validation import InvalidInput, as_contexts

Mode = Literal["apprentice", "online"]
MODES: tuple[str, ...] = ("apprentice", "online")


def check_mode(mode: str) -> Mode:
    """``mode`` when it is one of :data:`MODES`; else :class:`InvalidInput`."""
    if mode not in MODES:
        raise InvalidInput("mode", f"must be one of {MODES}, got {mode!r}")
    return cast(Mode, mode)


class ApprenticeModel(Protocol):
    """A model created in apprentice mode (:class:`Apprentice`, or a ranking model
    created with ``mode: apprentice``): its mode switch and its agreement figures."""

    @property
    def mode(self) -> Mode: ...

    def set_mode(self, mode: str) -> None: ...

    def agreement(self) -> dict[str, float | int | None]: ...


def apprentice_model(learner: Learner) -> ApprenticeModel | None:
    """``learner`` when it was created in apprentice mode (whatever its mode now), else None."""
    if isinstance(learner, Apprentice) or getattr(learner, "apprentice_created", False):
        return cast(ApprenticeModel, learner)
    return None


class AgreementTracker:
    """How often a learner's greedy choice agrees with the default it played, and both
    rewards as it estimates them, over the apprentice decisions learned from.

    A decision played in apprentice mode carries ``extras`` ``apprentice`` (1.0),
    ``own_estimate`` and ``default_estimate``; ``greedy_action`` is the learner's own
    choice and ``action`` the default.  Counted at learn time, not at decision time: the
    process that learns (and checkpoints) a model is not always the one that decided.
    """

    def __init__(self, window: int = 500) -> None:
        if window < 1:
            raise ValueError(f"agreement_window must be >= 1, got {window}")
        self.window = window
        self._compared = 0
        self._agreed = 0
        self._recent_agreement = 0.0  # exponential average, bias-corrected when read
        self._own_estimate_sum = 0.0
        self._default_estimate_sum = 0.0
        self._default_feedback = 0
        self._default_reward_sum = 0.0

    def learned(self, decision: Decision, feedback: Feedback) -> None:
        """Count ``decision`` (learned with ``feedback``) when it was an apprentice's."""
        if not decision.extras.get("apprentice") or feedback.loss is None:
            return
        agreed = decision.greedy_action == decision.action
        self._compared += 1
        self._agreed += int(agreed)
        rate = 1.0 / self.window
        self._recent_agreement += rate * (float(agreed) - self._recent_agreement)
        self._own_estimate_sum += float(decision.extras.get("own_estimate", 0.0))
        self._default_estimate_sum += float(decision.extras.get("default_estimate", 0.0))
        self._default_feedback += 1
        self._default_reward_sum += 1.0 - feedback.loss

    def report(self) -> dict[str, float | int | None]:
        """Agreement of the learner's greedy choice with the default, and reward estimates.

        ``agreement_rate``: over every apprentice decision with feedback; ``recent_agreement_rate``:
        exponentially weighted over about ``window`` decisions;
        ``estimated_reward`` / ``default_estimated_reward``: the learner's mean predicted
        reward of its own choice / of the default; ``default_observed_reward``: the mean
        reward the default actually earned (``1 - loss``).
        """
        n = self._compared
        decay = (1.0 - 1.0 / self.window) ** n
        recent = self._recent_agreement / (1.0 - decay) if n else None
        m = self._default_feedback
        return {
            "decisions_compared": n,
            "agreement_rate": self._agreed / n if n else None,
            "recent_agreement_rate": recent if recent is None or math.isfinite(recent) else None,
            "estimated_reward": self._own_estimate_sum / n if n else None,
            "default_estimated_reward": self._default_estimate_sum / n if n else None,
            "default_feedback": m,
            "default_observed_reward": self._default_reward_sum / m if m else None,
        }

    def state(self, mode: Mode) -> dict[str, Any]:
        """The counters and ``mode``, as JSON (a checkpoint's ``apprentice`` entry)."""
        return {
            "mode": mode,
            "compared": self._compared,
            "agreed": self._agreed,
            "recent_agreement": self._recent_agreement,
            "own_estimate_sum": self._own_estimate_sum,
            "default_estimate_sum": self._default_estimate_sum,
            "default_feedback": self._default_feedback,
            "default_reward_sum": self._default_reward_sum,
        }

    def load(self, saved: dict[str, Any]) -> None:
        """Restore :meth:`state` output (the mode is the caller's)."""
        self._compared = int(saved.get("compared", 0))
        self._agreed = int(saved.get("agreed", 0))
        self._recent_agreement = float(saved.get("recent_agreement", 0.0))
        self._own_estimate_sum = float(saved.get("own_estimate_sum", 0.0))
        self._default_estimate_sum = float(saved.get("default_estimate_sum", 0.0))
        self._default_feedback = int(saved.get("default_feedback", 0))
        self._default_reward_sum = float(saved.get("default_reward_sum", 0.0))


class Apprentice(Learner):
    """Wraps a classification learner; decides with the caller's default while apprenticed.

    Parameters
    ----------
    inner
        The learner that learns (and decides, once online).
    mode
        ``apprentice`` (play the default) or ``online`` (play the learner's decision).
    agreement_window
        Decisions over which the recent agreement rate is averaged (exponentially).
    """

    def __init__(
        self, inner: GradientBandit, *, mode: Mode = "apprentice", agreement_window: int = 500
    ) -> None:
        if inner.task != "classification":
            raise ValueError("apprentice mode is for classification models (actions to agree on)")
        self._agreement = AgreementTracker(agreement_window)
        self.inner = inner
        self.task, self.n_features, self.n_actions = inner.task, inner.n_features, inner.n_actions
        self.seed = inner.seed
        self.agreement_window = agreement_window
        self._mode: Mode = check_mode(mode)

    @property
    def apprentice(self) -> Apprentice:
        """Itself: it takes the caller's default actions."""
        return self

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: str) -> None:
        """Switch between ``apprentice`` and ``online``; the learned state is kept."""
        self._mode = check_mode(mode)

    # -- deciding --------------------------------------------------------------------
    def act(
        self,
        context: Sequence[float] | FloatArray,
        event_id: str | None = None,
        default_action: int | None = None,
    ) -> Decision:
        """Apprentice: the default with probability 1 (``greedy_action`` = the learner's
        own choice); online: the learner's decision (the default is ignored)."""
        own = self.inner.act(context, event_id)
        if self._mode == "online":
            return own
        if default_action is None:
            raise InvalidInput(
                "default_action", "an apprentice-mode model needs the caller's default_action"
            )
        if not (isinstance(default_action, int) and 0 <= default_action < self.n_actions):
            raise InvalidInput("default_action", f"must be an action in [0, {self.n_actions - 1}]")
        greedy = int(own.greedy_action if own.greedy_action is not None else -1)
        estimates = self.inner.reward_estimates(cast(tuple[float, ...], own.context))
        return Decision(
            own.event_id,
            own.context,
            own.model_version,
            action=default_action,
            propensity=1.0,
            greedy_action=greedy,
            leaf=own.leaf,
            explored=False,
            extras={
                **own.extras,
                "apprentice": 1.0,
                "own_estimate": float(estimates[greedy]),
                "default_estimate": float(estimates[default_action]),
            },
        )

    def act_batch(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
        default_actions: Sequence[int] | None = None,
    ) -> list[Decision]:
        """:meth:`act` per row, with the caller's default of each row (``default_actions``,
        one per context; needed in apprentice mode, ignored online)."""
        x = as_contexts(contexts, self.n_features)
        ids = self._check_event_ids(event_ids, x.shape[0])
        if default_actions is not None and len(default_actions) != x.shape[0]:
            raise InvalidInput(
                "default_actions",
                f"holds {len(default_actions)} actions for {x.shape[0]} contexts",
            )
        defaults = list(default_actions) if default_actions is not None else [None] * len(ids)
        return [
            self.act(row, event_id, default)
            for row, event_id, default in zip(x, ids, defaults, strict=True)
        ]

    def act_columns(
        self,
        contexts: Sequence[Sequence[float]] | FloatArray,
        event_ids: Sequence[str | None] | None = None,
        default_actions: Sequence[int] | None = None,
    ) -> DecisionColumns:
        """:meth:`act_batch` held column by column."""
        return DecisionColumns.from_decisions(self.act_batch(contexts, event_ids, default_actions))

    # -- learning (the inner learner's) ----------------------------------------------
    def check(self, decision: Decision, feedback: Feedback) -> None:
        self.inner.check(decision, feedback)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        changed = self.inner.learn(decision, feedback)
        self._agreement.learned(decision, feedback)
        return changed

    def note_unanswered(self, decision: Decision) -> None:
        self.inner.note_unanswered(decision)

    def leaf_stats(self) -> dict[str, Any] | None:
        return self.inner.leaf_stats()

    def leaf_probabilities(self) -> list[list[list[float]]] | None:
        return self.inner.leaf_probabilities()

    def drift_events(self) -> list[dict[str, Any]]:
        return self.inner.drift_events()

    def input_scaling(self) -> dict[str, list[float]] | None:
        return self.inner.input_scaling()

    def trace(self, context: Any) -> dict[str, Any]:
        return self.inner.trace(context)

    def predict(self, contexts: FloatArray) -> FloatArray:
        return self.inner.predict(contexts)

    def reward_estimates(self, context: Sequence[float] | FloatArray) -> FloatArray:
        return self.inner.reward_estimates(context)

    def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray:
        return self.inner.action_probabilities(context)

    @property
    def version(self) -> int:
        return self.inner.version

    @property
    def counters(self) -> dict[str, float]:
        return self.inner.counters

    def config(self) -> dict[str, Any]:
        return self.inner.config()

    def export_model(self) -> dict[str, Any]:
        return self.inner.export_model()

    def parameters(self) -> dict[str, np.ndarray]:
        """A copy of the inner learner's parameters."""
        return self.inner.parameters()

    # -- what it reports -------------------------------------------------------------
    def agreement(self) -> dict[str, float | int | None]:
        """:meth:`AgreementTracker.report` of this model's apprentice decisions."""
        return self._agreement.report()

    # -- state -----------------------------------------------------------------------
    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors, meta = self.inner.state()
        meta["apprentice"] = self._agreement.state(self._mode)
        return tensors, meta

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        self.inner.load_state(tensors, meta)
        saved = meta.get("apprentice") or {}
        self.set_mode(str(saved.get("mode", "apprentice")))
        self._agreement.load(saved)
