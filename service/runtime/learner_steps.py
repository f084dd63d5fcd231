"""The parts of a model's learner that need no store: its policy, its errors, its
retry wait and one slice of learning (see :mod:`service.runtime.learner`)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from banditree.learners import Learner
from service.metrics import ModelMetrics
from service.runtime.replay import apply_entries, decode_entries
from service.store import LogEntry
from service.tick_metrics import observe_all

_SLICE_SECONDS = 0.05  # longest stretch of learning between two looks at the lease
_RETRY_SECONDS = 0.5  # wait after the store failed
_CHUNK = 64  # entries learned between two looks at the slice's time


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
    """Learn from ``entries`` in order for at most one slice: ``(entries done, updates)``.

    The entries are decoded (:func:`decode_entries`) and learned (``learn_batch``) in
    chunks of :data:`_CHUNK`, the slice's time looked at between chunks: the same state
    as :func:`apply_entry` entry by entry.  Each feedback learned is observed
    in ``update_latency`` at its chunk's mean time per feedback.
    """
    started = time.perf_counter()
    changed = done = 0
    latencies: list[float] = []
    while done < len(entries):
        chunk = entries[done : done + _CHUNK]
        pairs = decode_entries(chunk, uid=uid, default_loss=default_loss)
        t0 = time.perf_counter()
        outcomes = apply_entries(learner, chunk, pairs)
        spent = time.perf_counter() - t0
        learned = sum(1 for o in outcomes if o.learned)
        changed += sum(1 for o in outcomes if o.changed)
        latencies += [spent / learned] * learned if learned else []
        done += len(chunk)
        if time.perf_counter() - started >= _SLICE_SECONDS:
            break
    m = metrics
    if changed:
        m.updates.inc(changed)
    observe_all(m.update_latency, latencies)
    m.set_learner_counters(learner.counters)
    m.learned_offset.set(entries[done - 1].offset)
    return done, changed
