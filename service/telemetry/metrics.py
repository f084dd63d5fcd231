"""Prometheus metrics of one app, in its own registry (several apps can live in one process).

The metric names are part of the service contract; dashboards query them.

Per-model series are made when a model is first used in this process (not for idle
models), for at most ``max_model_series`` models: past that, a model's counters and
histograms add to the series of the label :data:`OTHER_MODELS` and its gauges are not
exported, so a fleet of ten thousand models keeps a bounded ``/metrics`` page and the
memory its series take (about 30 KB a model).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, fields
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from service.telemetry.tick_metrics import TickMetrics

LATENCY_BUCKETS_SECONDS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip
CHECKPOINT_BUCKETS_SECONDS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
FEEDBACK_OUTCOMES = ("applied", "unknown", "expired", "duplicate", "invalid")
LOOP_LAG_BUCKETS_SECONDS = (
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0,
)  # fmt: skip
#: the ``model`` label of the models past the series limit, added up
OTHER_MODELS = "_other"
STALENESS_BUCKETS_SECONDS = (
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0,
    5.0, 10.0, 30.0,
)  # fmt: skip


class _Unexported:
    """A gauge of a model past the series limit: set, read as nothing, never exported."""

    def set(self, value: float) -> None:
        """Export nothing."""

    def inc(self, amount: float = 1.0) -> None:
        """Export nothing."""

    def observe(self, amount: float) -> None:
        """Export nothing."""


class LeaseHolderGauge:
    """``banditree_learner_lease_holder{model, holder}``: 1 for the holder, one series."""

    def __init__(self, gauge: Gauge, model: str) -> None:
        self.gauge, self.model = gauge, model
        self.holder: str | None = None

    def set(self, holder: str | None) -> None:
        if holder == self.holder:
            return
        if self.holder is not None:
            with contextlib.suppress(KeyError):
                self.gauge.remove(self.model, self.holder)
        self.holder = holder
        if holder is not None:
            self.gauge.labels(self.model, holder).set(1)


@dataclass(frozen=True)
class ModelMetrics:
    """The children of every per-model metric, bound once to the model's label."""

    predictions: Any
    explored: Any
    feedback: dict[str, Any]
    updates: Any
    version: Any
    mean_loss: Any
    feedback_clipped: Any
    feedback_refused: Any
    drift_signals: Any
    update_latency: Any
    predict_latency: Any
    checkpoint_duration: Any
    checkpoint_age: Any
    checkpoint_failures: Any
    checkpoint_corrupt: Any
    pending: Any
    expired: Any
    reachable_leaves: Any
    unlogged: Any
    staleness: Any
    log_entries: Any
    served_offset: Any
    learned_offset: Any
    lease_held: Any
    lease_holder: LeaseHolderGauge
    #: the hot path's counters and histograms are updated through it, once per tick
    tick: TickMetrics = field(default_factory=TickMetrics)

    def set_learner_counters(self, counters: dict[str, float]) -> None:
        """The gauges read from a learner's counters: its progressive mean loss, the
        feedback its clip cut or refused and the changes its detector signalled."""
        self.mean_loss.set(counters.get("progressive_mean_loss", float("nan")))
        self.feedback_clipped.set(counters.get("feedback_clipped", 0))
        self.feedback_refused.set(counters.get("feedback_refused", 0))
        self.drift_signals.set(counters.get("drift_signals", 0))

    def set_lease_holder(self, holder: str | None) -> None:
        """Report who holds the model's learner lease (None: nobody)."""
        self.lease_holder.set(holder)


#: ServiceMetrics attributes labelled by ``model`` alone; ModelMetrics binds each by the same name
_MODEL_LABELLED = tuple(
    f.name for f in fields(ModelMetrics) if f.name not in ("feedback", "lease_holder", "tick")
)


class ServiceMetrics:
    """Every metric the service exports (prefix ``banditree_``)."""

    def __init__(self, *, max_model_series: int = 1000) -> None:
        self.registry = CollectorRegistry()
        #: models with series of their own (the others add to :data:`OTHER_MODELS`)
        self.max_model_series = max_model_series
        self._bound: dict[str, ModelMetrics] = {}
        self._shared: ModelMetrics | None = None  # the children of the models past the limit
        self.tick = (
            TickMetrics()
        )  # per-tick updates of the hot paths (service.telemetry.tick_metrics)
        self._holders: dict[str, LeaseHolderGauge] = {}
        r, m = self.registry, ["model"]
        self.predictions = Counter("banditree_predictions", "Decisions served.", m, registry=r)
        self.explored = Counter(
            "banditree_explored_decisions", "Decisions that played a non-greedy action.", m,
            registry=r,
        )  # fmt: skip
        self.feedback = Counter(
            "banditree_feedback", "Feedback requests by outcome.", ["model", "outcome"], registry=r
        )
        self.updates = Counter("banditree_updates", "Parameter updates applied.", m, registry=r)
        self.version = Gauge("banditree_model_version", "Current model version.", m, registry=r)
        self.mean_loss = Gauge(
            "banditree_progressive_mean_loss", "Mean of every loss learned from.", m, registry=r
        )
        self.feedback_clipped = Gauge(
            "banditree_feedback_clipped",
            "Feedback whose gradient estimate was clipped to the learner's bound, all time.",
            m, registry=r,
        )  # fmt: skip
        self.feedback_refused = Gauge(
            "banditree_feedback_refused",
            "Feedback whose update was dropped for not being finite, all time.", m, registry=r,
        )  # fmt: skip
        self.drift_signals = Gauge(
            "banditree_drift_signals",
            "Rises of the loss the learner's change detector signalled, all time.", m, registry=r,
        )  # fmt: skip
        self.update_latency = Histogram(
            "banditree_update_latency_seconds", "Time to learn from one feedback.", m,
            registry=r, buckets=LATENCY_BUCKETS_SECONDS,
        )  # fmt: skip
        self.predict_latency = Histogram(
            "banditree_predict_latency_seconds", "Time to decide (one request).", m,
            registry=r, buckets=LATENCY_BUCKETS_SECONDS,
        )  # fmt: skip
        self.checkpoint_duration = Histogram(
            "banditree_checkpoint_duration_seconds", "Time to write one checkpoint.", m,
            registry=r, buckets=CHECKPOINT_BUCKETS_SECONDS,
        )  # fmt: skip
        self.checkpoint_age = Gauge(
            "banditree_checkpoint_age_seconds", "Seconds since the last checkpoint.", m, registry=r
        )
        self.checkpoint_failures = Counter(
            "banditree_checkpoint_failures", "Checkpoints that could not be written.", m,
            registry=r,
        )  # fmt: skip
        self.checkpoint_corrupt = Counter(
            "banditree_checkpoint_corrupt", "Checkpoints skipped at restore as corrupt.", m,
            registry=r,
        )  # fmt: skip
        self.pending = Gauge(
            "banditree_pending_events", "Decisions waiting for feedback.", m, registry=r
        )
        self.expired = Counter(
            "banditree_expired_events", "Decisions whose feedback never came.", m, registry=r
        )
        self.reachable_leaves = Gauge(
            "banditree_tel_reachable_leaves", "Mean reachable leaves per decision (TEL).", m,
            registry=r,
        )  # fmt: skip
        self.unlogged = Counter(
            "banditree_unlogged_predictions", "Decisions answered while the store was away "
            "(not logged: their feedback cannot be taken).", m, registry=r,
        )  # fmt: skip
        self.staleness = Histogram(
            "banditree_model_staleness_seconds", "From an acknowledged feedback to this process "
            "serving a snapshot that includes it.", m, registry=r,
            buckets=STALENESS_BUCKETS_SECONDS,
        )  # fmt: skip
        self.log_entries = Gauge(
            "banditree_log_entries", "Entries held in the model's feedback log.", m, registry=r
        )
        self.served_offset = Gauge(
            "banditree_served_log_offset", "Last log offset in the snapshot this process serves.",
            m, registry=r,
        )  # fmt: skip
        self.learned_offset = Gauge(
            "banditree_learned_log_offset", "Last log offset applied by this process's learner.",
            m, registry=r,
        )  # fmt: skip
        self.lease_held = Gauge(
            "banditree_learner_lease_held", "1 while this process learns the model.", m,
            registry=r,
        )  # fmt: skip
        self.lease_holder = Gauge(
            "banditree_learner_lease_holder", "The process holding the model's learner lease.",
            ["model", "holder"], registry=r,
        )  # fmt: skip
        self.kernel = Gauge(
            "banditree_kernel_info", "The kernel that decides and learns (1 on its label).",
            ["kernel"], registry=r,
        )  # fmt: skip
        self.models_loaded = Gauge(
            "banditree_models_loaded", "Models held by this process.", registry=r
        )
        self.models_led = Gauge(
            "banditree_learner_models_led", "Models whose learner lease this process holds.",
            registry=r,
        )  # fmt: skip
        self.idle_pass = Histogram(
            "banditree_learner_idle_pass_seconds",
            "Length of each pass over this process's idle learners (lease renewals and "
            "the look for other processes' work).",
            buckets=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0), registry=r,
        )  # fmt: skip
        self.idle_pass_learners = Gauge(
            "banditree_learner_idle_pass_learners",
            "Idle learners the last such pass looked at (the active ones and a slice of the rest).",
            registry=r,
        )  # fmt: skip
        self.fair_share = Gauge(
            "banditree_learner_fair_share",
            "The most models this process leads: ceil(models / live learner processes).",
            registry=r,
        )  # fmt: skip
        self.applied_entries = Counter(
            "banditree_learner_applied_entries",
            "Log entries (feedbacks and expiries) applied by this process's learners.",
            registry=r,
        )  # fmt: skip
        self.apprentice_agreement = Gauge(
            "banditree_apprentice_agreement_ratio",
            "Apprentice mode: share of recent decisions where the model's choice is the default.",
            m, registry=r,
        )  # fmt: skip
        self.apprentice_reward_estimate = Gauge(
            "banditree_apprentice_estimated_reward",
            "Apprentice mode: the model's mean predicted reward of its own choice or the default.",
            ["model", "policy"], registry=r,
        )  # fmt: skip
        self.loop_lag = Histogram(
            "banditree_event_loop_lag_seconds",
            "How late a 25 ms timer of the event loop fires (the loop or the GIL held).",
            registry=r, buckets=LOOP_LAG_BUCKETS_SECONDS,
        )  # fmt: skip
        self.http_requests = Counter(
            "banditree_http_requests", "HTTP requests.", ["route", "method", "status"], registry=r
        )
        self.http_duration = Histogram(
            "banditree_http_request_duration_seconds", "HTTP request duration.",
            ["route", "method"], registry=r, buckets=LATENCY_BUCKETS_SECONDS,
        )  # fmt: skip

    def for_model(self, name: str) -> ModelMetrics:
        """Bind every per-model metric to ``name`` (and create its series at zero); past
        ``max_model_series`` models, to the shared :data:`OTHER_MODELS` series (gauges
        unexported).  The same object for every call with ``name``."""
        bound = self._bound.get(name)
        if bound is None:
            if len(self._holders) < self.max_model_series:
                bound = self._own_series(name)
            else:
                bound = self._other_series()
            self._bound[name] = bound
        return bound

    def _own_series(self, name: str) -> ModelMetrics:
        feedback = {o: self.feedback.labels(name, o) for o in FEEDBACK_OUTCOMES}
        children = {attr: getattr(self, attr).labels(name) for attr in _MODEL_LABELLED}
        holder = self._holders.setdefault(name, LeaseHolderGauge(self.lease_holder, name))
        return ModelMetrics(feedback=feedback, lease_holder=holder, tick=self.tick, **children)

    def _other_series(self) -> ModelMetrics:
        """The children shared by the models past the limit (made once)."""
        if self._shared is not None:
            return self._shared
        feedback = {o: self.feedback.labels(OTHER_MODELS, o) for o in FEEDBACK_OUTCOMES}
        children = {
            attr: getattr(self, attr).labels(OTHER_MODELS)
            if isinstance(getattr(self, attr), Counter | Histogram)
            else _Unexported()
            for attr in _MODEL_LABELLED
        }
        holder: Any = _Unexported()
        self._shared = ModelMetrics(
            feedback=feedback, lease_holder=holder, tick=self.tick, **children
        )
        return self._shared

    def unexported(self) -> ModelMetrics:
        """Children that export nothing: for a model restored only to be looked at."""
        nothing = _Unexported()
        children: dict[str, Any] = dict.fromkeys(_MODEL_LABELLED, nothing)
        feedback = dict.fromkeys(FEEDBACK_OUTCOMES, nothing)
        holder: Any = nothing
        return ModelMetrics(feedback=feedback, lease_holder=holder, tick=self.tick, **children)

    def has_series(self, name: str) -> bool:
        """Whether ``name`` has per-model series of its own."""
        return name in self._holders

    def forget_model(self, name: str) -> None:
        """Drop the series of a deleted model."""
        if self._bound.pop(name, None) is None or name not in self._holders:
            return  # never used here, or counted in the shared series
        for attr in _MODEL_LABELLED:
            with contextlib.suppress(KeyError):
                getattr(self, attr).remove(name)
        for outcome in FEEDBACK_OUTCOMES:
            with contextlib.suppress(KeyError):
                self.feedback.remove(name, outcome)
        holder = self._holders.pop(name, None)
        if holder is not None:
            holder.set(None)
        with contextlib.suppress(KeyError):
            self.apprentice_agreement.remove(name)
        for policy in ("own", "default"):
            with contextlib.suppress(KeyError):
                self.apprentice_reward_estimate.remove(name, policy)
