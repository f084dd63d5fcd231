"""A slice of learning is cut into chunks sized by the model's pace: a fast model learns
a whole read in a few calls, a slow one looks at the slice's time often enough, and the
state is the same whatever the chunks."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.learners import build_learner
from service.domain.runtime import learner_steps
from service.domain.runtime.learner_steps import MAX_CHUNK, apply_slice, chunk_size
from service.domain.runtime.replay import replay
from service.telemetry.metrics import ServiceMetrics
from tests.service.domain.test_replay_batch import CONFIG, UID, entries


def test_a_chunk_is_what_fits_in_the_time_left_within_bounds() -> None:
    assert chunk_size(1e-4, 0.02) == 200
    assert chunk_size(1e-9, 0.05) == MAX_CHUNK  # a fast model: the largest call
    assert chunk_size(1.0, 0.05) == learner_steps._MIN_CHUNK  # a slow one: the smallest
    assert chunk_size(0.0, 0.05) == MAX_CHUNK


class _Clock:
    """A clock that moves only when the test moves it (as the learner learns)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("per_entry", "expected"),
    [
        (2**-16, [64, 512, 512]),  # 50 ms hold 3,276 entries: capped at 512 a call
        # 64 take 31.25 ms; the 18.75 ms left hold 38.4; the 0.2 ms then left, the
        # fewest (the slice ends past its time by less than that chunk)
        (2**-11, [64, 38, 16]),
        (2**-7, [64]),  # the first chunk already spends the slice
    ],
)
def test_chunks_follow_the_pace_and_end_the_slice(
    per_entry: float, expected: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(learner_steps.time, "perf_counter", clock)
    chunks: list[int] = []
    apply = learner_steps.count_chunk

    def timed(learner, chunk, **kwargs):  # type: ignore[no-untyped-def]
        chunks.append(len(chunk))
        clock.now += per_entry * len(chunk)
        return apply(learner, chunk, **kwargs)

    monkeypatch.setattr(learner_steps, "count_chunk", timed)
    log = entries(1200)[:1088]
    learner = build_learner(CONFIG)
    done, _ = apply_slice(
        learner, log, uid=UID, default_loss=None, metrics=ServiceMetrics().for_model("m")
    )
    assert chunks == expected and done == sum(expected)


def test_the_state_does_not_depend_on_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    log = entries(600)
    offline = replay(CONFIG, log, uid=UID, default_loss=None)
    for first in (1, 16, 64, 700):
        monkeypatch.setattr(learner_steps, "_FIRST_CHUNK", first)
        live, rest = build_learner(CONFIG), log
        while rest:
            done, _ = apply_slice(
                live, rest, uid=UID, default_loss=None, metrics=ServiceMetrics().for_model("m")
            )
            rest = rest[done:]
        a, b = offline.state()[0], live.state()[0]
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=f"{name}, first {first}")
        assert live.version == offline.version


@pytest.mark.parametrize(
    ("per_entry", "first", "then"),
    [
        (2**-16, [64, 512, 512], [512, 512]),  # known fast: the largest call at once
        # 118 entries took 57.6 ms: the next slice's first chunk is the 102.4 of 50 ms
        # (49.8 ms), then the fewest
        (2**-11, [64, 38, 16], [102, 16]),
    ],
)
def test_a_slice_starts_at_the_pace_of_the_last(
    per_entry: float, first: list[int], then: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(learner_steps.time, "perf_counter", clock)
    chunks: list[int] = []
    count = learner_steps.count_chunk

    def timed(learner, chunk, **kwargs):  # type: ignore[no-untyped-def]
        chunks.append(len(chunk))
        clock.now += per_entry * len(chunk)
        return count(learner, chunk, **kwargs)

    monkeypatch.setattr(learner_steps, "count_chunk", timed)
    log, learner = entries(3000), build_learner(CONFIG)
    pace = learner_steps.Pace()
    metrics = ServiceMetrics().for_model("m")
    done, _ = apply_slice(
        learner, log[:1088], uid=UID, default_loss=None, metrics=metrics, pace=pace
    )
    assert chunks == first and done == sum(first)
    assert pace.seconds_per_entry == per_entry
    chunks.clear()
    rest = log[done : done + 1024]
    apply_slice(learner, rest, uid=UID, default_loss=None, metrics=metrics, pace=pace)
    assert chunks == then
