"""The parts of a model's learner that need no store: its policy, its errors, its
retry wait and one slice of learning (see :mod:`service.domain.runtime.learner`)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from banditree.learners import Learner
from service.domain.runtime.replay import count_chunk
from service.store import LogChunk, LogEntry
from service.telemetry.metrics import ModelMetrics
from service.telemetry.tick_metrics import observe_counted

_SLICE_SECONDS = 0.05  # longest stretch of learning between two looks at the lease
_RETRY_SECONDS = 0.5  # wait after the store failed
MAX_CHUNK = 512  # most entries learned between two looks at the slice's time
_MIN_CHUNK = 16  # fewest (a slow model's chunk: its slice is not overrun by much)
_FIRST_CHUNK = 64  # the first chunk of a slice, before the pace is known


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


def chunk_size(seconds_per_entry: float, seconds_left: float) -> int:
    """Entries in the next chunk: those that fit in ``seconds_left`` at
    ``seconds_per_entry``, between :data:`_MIN_CHUNK` and :data:`MAX_CHUNK`."""
    if seconds_per_entry <= 0.0:
        return MAX_CHUNK
    return max(_MIN_CHUNK, min(MAX_CHUNK, int(seconds_left / seconds_per_entry)))


@dataclass
class Pace:
    """The seconds a model's last slice took an entry (0.0: none learned yet): the first
    chunk of the next slice is sized by it, as the later chunks of a slice are by the
    slice's own pace, rather than :data:`_FIRST_CHUNK` every slice."""

    seconds_per_entry: float = 0.0


def apply_slice(
    learner: Learner,
    entries: LogChunk | list[LogEntry],
    *,
    uid: str,
    default_loss: float | None,
    metrics: ModelMetrics,
    pace: Pace | None = None,
) -> tuple[int, int]:
    """Learn from ``entries`` in order for at most one slice: ``(entries done, updates)``.

    The entries are decoded and learned (:func:`count_chunk`: one kernel call decodes a
    chunk, one learns it) in chunks, the slice's time looked at between chunks: the same state as
    :func:`apply_entry` entry by entry, whatever the chunks (``learn_batch`` is exact).
    A chunk is what fits in the slice's time left at the pace seen so far
    (:func:`chunk_size`): a fast model learns a whole read in one call (each call and
    each decoding has a cost of its own: ``docs/decisions/0007-event-loop-garbage.md``),
    a slow one looks at the time often enough.  The pace seen so far is the slice's,
    before its first chunk ``pace``'s (the model's last slice, which this one updates),
    else the first chunk is :data:`_FIRST_CHUNK`.  Each feedback learned is observed in
    ``update_latency`` at its chunk's mean time per feedback.
    """
    chunks = entries if isinstance(entries, LogChunk) else LogChunk.of(entries)
    started = time.perf_counter()
    changed = done = 0
    known = 0.0 if pace is None else pace.seconds_per_entry
    size = chunk_size(known, _SLICE_SECONDS) if known > 0.0 else _FIRST_CHUNK
    latencies: list[tuple[float, int]] = []
    elapsed = 0.0
    while done < len(chunks):
        chunk = chunks[done : done + size]
        t0 = time.perf_counter()
        learned, updated = count_chunk(learner, chunk, uid=uid, default_loss=default_loss)
        now = time.perf_counter()
        changed += updated
        if learned:
            latencies.append(((now - t0) / learned, learned))
        done += len(chunk)
        elapsed = now - started
        if elapsed >= _SLICE_SECONDS:
            break
        size = chunk_size(elapsed / done, _SLICE_SECONDS - elapsed)
    if pace is not None and done:
        pace.seconds_per_entry = elapsed / done
    m = metrics
    if changed:
        m.updates.inc(changed)
    observe_counted(m.update_latency, latencies)
    m.set_learner_counters(learner.counters)
    m.learned_offset.set(chunks.offsets[done - 1])
    return done, changed
