"""The parts of a model's learner that need no store: its policy, its errors, its
retry wait and one slice of learning (see :mod:`service.runtime.learner`)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from banditree.learners import Learner
from service.metrics import ModelMetrics
from service.runtime.replay import apply_entry
from service.store import LogEntry

_SLICE_SECONDS = 0.05  # longest stretch of learning between two looks at the lease
_RETRY_SECONDS = 0.5  # wait after the store failed


def retry_seconds() -> float:
    """The wait after a failure, about ``_RETRY_SECONDS``.

    Spread, so that the learners of thousands of models that met one failure do not all
    retry at the same moment.
    """
    return _RETRY_SECONDS * (0.5 + random.random())


class LeaseLost(Exception):
    """The lease was taken over (or revoked): stop learning, try to take it again later."""


class HandedOver(Exception):
    """This process was over its share: the lease was given back, for another to take."""


@dataclass(frozen=True)
class LearnerPolicy:
    """When to publish, how many checkpoints to keep, and the default loss of expiries."""

    every_updates: int
    every_seconds: float
    keep: int
    default_loss: float | None
    lease_seconds: float


def apply_slice(
    learner: Learner,
    entries: list[LogEntry],
    *,
    uid: str,
    default_loss: float | None,
    metrics: ModelMetrics,
) -> tuple[int, int]:
    """Learn from ``entries`` in order for at most one slice: ``(entries done, updates)``."""
    started = time.perf_counter()
    changed = 0
    m = metrics
    done = 0
    for entry in entries:
        done += 1
        t0 = time.perf_counter()
        applied = apply_entry(learner, entry, uid=uid, default_loss=default_loss)
        if applied.learned:
            m.update_latency.observe(time.perf_counter() - t0)
        if applied.changed:
            changed += 1
            m.updates.inc()
        if time.perf_counter() - started >= _SLICE_SECONDS:
            break
    m.set_learner_counters(learner.counters)
    m.learned_offset.set(entries[done - 1].offset)
    return done, changed
