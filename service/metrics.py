"""Prometheus metrics of one app, in its own registry (several apps can live in one process).

The metric names are part of the service contract; dashboards query them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS_SECONDS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip
CHECKPOINT_BUCKETS_SECONDS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
FEEDBACK_OUTCOMES = ("applied", "unknown", "expired", "duplicate", "invalid")


@dataclass(frozen=True)
class ModelMetrics:
    """The children of every per-model metric, bound once to the model's label."""

    predictions: Any
    explored: Any
    feedback: dict[str, Any]
    updates: Any
    version: Any
    mean_loss: Any
    update_latency: Any
    predict_latency: Any
    checkpoint_duration: Any
    checkpoint_age: Any
    checkpoint_failures: Any
    checkpoint_corrupt: Any
    pending: Any
    expired: Any
    reachable_leaves: Any


class ServiceMetrics:
    """Every metric the service exports (prefix ``banditree_``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
        self.models_loaded = Gauge(
            "banditree_models_loaded", "Models held by this process.", registry=r
        )
        self.http_requests = Counter(
            "banditree_http_requests", "HTTP requests.", ["route", "method", "status"], registry=r
        )
        self.http_duration = Histogram(
            "banditree_http_request_duration_seconds", "HTTP request duration.",
            ["route", "method"], registry=r, buckets=LATENCY_BUCKETS_SECONDS,
        )  # fmt: skip

    def for_model(self, name: str) -> ModelMetrics:
        """Bind every per-model metric to ``name`` (and create its series at zero)."""
        return ModelMetrics(
            predictions=self.predictions.labels(name),
            explored=self.explored.labels(name),
            feedback={o: self.feedback.labels(name, o) for o in FEEDBACK_OUTCOMES},
            updates=self.updates.labels(name),
            version=self.version.labels(name),
            mean_loss=self.mean_loss.labels(name),
            update_latency=self.update_latency.labels(name),
            predict_latency=self.predict_latency.labels(name),
            checkpoint_duration=self.checkpoint_duration.labels(name),
            checkpoint_age=self.checkpoint_age.labels(name),
            checkpoint_failures=self.checkpoint_failures.labels(name),
            checkpoint_corrupt=self.checkpoint_corrupt.labels(name),
            pending=self.pending.labels(name),
            expired=self.expired.labels(name),
            reachable_leaves=self.reachable_leaves.labels(name),
        )

    def forget_model(self, name: str) -> None:
        """Drop the series of a deleted model."""
        for metric in (
            self.predictions, self.explored, self.updates, self.version, self.mean_loss,
            self.update_latency, self.predict_latency, self.checkpoint_duration,
            self.checkpoint_age, self.checkpoint_failures, self.checkpoint_corrupt,
            self.pending, self.expired, self.reachable_leaves,
        ):  # fmt: skip
            try:
                metric.remove(name)
            except KeyError:
                pass
        for outcome in FEEDBACK_OUTCOMES:
            try:
                self.feedback.remove(name, outcome)
            except KeyError:
                pass
