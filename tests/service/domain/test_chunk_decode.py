"""The learner's chunks decoded by one kernel call (``apply_chunk``) learn what the
Python decoding of each entry learns (``decode_entries`` and ``apply_entries``): the
same outcomes, the same learned state, the same entries named in the log, on chunks
drawn by hypothesis from a model's log and from hostile entries among it (truncated
and corrupted records, NaN and infinite contexts, other models', JSON records, every
form of feedback)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from banditree import kernel
from banditree.core.codec import binary_payload, decision_payload, feedback_json
from banditree.learners import Feedback, Learner, build_learner
from service.domain.runtime.replay import apply_chunk, apply_entries, decode_entries
from service.store import LogChunk, LogEntry
from tests.service.domain.test_replay_batch import CONFIG, UID, entries

if kernel.ACTIVE != "native":
    pytest.skip("the kernel's decoding needs the native kernel", allow_module_level=True)

D = CONFIG["n_features"]


def _both(log: list[LogEntry], default_loss: float | None, caplog: pytest.LogCaptureFixture):  # type: ignore[no-untyped-def]
    """``(outcomes, learner, log lines)`` of the chunk path and of the Python one."""
    out = []
    for path in ("chunk", "python"):
        learner: Learner = build_learner(CONFIG)
        for warm in entries(12)[:8]:  # past the eager rounds, a window open
            apply_entries(learner, [warm], decode_entries([warm], uid=UID, default_loss=None))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="banditree.service"):
            if path == "chunk":
                outcomes = apply_chunk(
                    learner, LogChunk.of(log), uid=UID, default_loss=default_loss
                )
            else:
                pairs = decode_entries(log, uid=UID, default_loss=default_loss)
                outcomes = apply_entries(learner, log, pairs)
        out.append((outcomes, learner, sorted(r.getMessage() for r in caplog.records)))
    return out


def _same(
    log: list[LogEntry], default_loss: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    (o1, a, lines1), (o2, b, lines2) = _both(log, default_loss, caplog)
    assert o1 == o2
    assert lines1 == lines2
    sa, sb = a.state()[0], b.state()[0]
    assert set(sa) == set(sb)
    for name in sa:
        np.testing.assert_allclose(sa[name], sb[name], rtol=0, atol=1e-12, err_msg=name)
    assert a.version == b.version


finite = st.floats(-1e6, 1e6, allow_nan=False)


@st.composite
def log_entry(draw: st.DrawFn) -> tuple[str, str | None]:
    context = draw(st.lists(finite, min_size=D, max_size=D))
    kind = draw(st.integers(0, 12))
    if kind == 0:
        context[draw(st.integers(0, D - 1))] = draw(st.sampled_from([math.nan, math.inf, 1e300]))
    uid = "other" if kind == 1 else UID
    action = draw(st.integers(0, 2)) if kind != 2 else draw(st.sampled_from([-1, 3, 2**40]))
    propensity = draw(st.floats(0.01, 1.0)) if kind != 3 else draw(st.sampled_from([0.0, 1.5]))
    payload = binary_payload(uid, f"e{kind}", context, 1, action, propensity, 0, 1, 0, False, None)
    assert payload is not None
    if kind == 4:
        payload = payload[: draw(st.integers(0, len(payload)))]
    elif kind == 5:
        at = draw(st.integers(3, len(payload) - 1))
        payload = payload[:at] + draw(st.sampled_from("0f9zG")) + payload[at + 1 :]
    elif kind == 6:  # a JSON record (a log written before the binary form)
        from banditree.core import Decision

        payload = decision_payload(
            UID, Decision(event_id="j", context=tuple(context), model_version=0, action=action,
                          propensity=propensity, greedy_action=0, extras={"x": 1.0}),
        )  # fmt: skip
    loss = draw(st.sampled_from([0.0, 1.0, 0.5, -0.0, 1e300, 7.0]))
    feedback = draw(
        st.sampled_from([
            feedback_json(Feedback(loss=loss)), feedback_json(Feedback(loss=loss)), None,
            '{"loss": 1}', '{"loss":"x"}', '{"losses":[0.1,0.2]}', "not json", '{"label":1.0}',
        ])
    )  # fmt: skip
    return payload, feedback


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(log_entry(), min_size=1, max_size=40), st.sampled_from([None, 0.25]))
def test_a_chunk_learns_what_the_python_decoding_learns(
    drawn: list[tuple[str, str | None]], default_loss: float | None
) -> None:
    log = [LogEntry(i + 1, f"ev{i}", d, f, 1.0 + i) for i, (d, f) in enumerate(drawn)]
    caplog = _Capture()
    _same(log, default_loss, caplog)  # type: ignore[arg-type]


class _Capture:
    """A log capture usable inside hypothesis' examples (pytest's fixture is per test)."""

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []
        self._handler = _ListHandler(self.records)

    def clear(self) -> None:
        self.records.clear()

    def at_level(self, level: int, logger: str):  # type: ignore[no-untyped-def]
        import contextlib

        @contextlib.contextmanager
        def scope():  # type: ignore[no-untyped-def]
            target = logging.getLogger(logger)
            old = target.level
            target.setLevel(level)
            target.addHandler(self._handler)
            try:
                yield
            finally:
                target.removeHandler(self._handler)
                target.setLevel(old)

        return scope()


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__()
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize("default_loss", [None, 0.75])
def test_the_odd_log_learns_the_same(
    default_loss: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    log = entries(300)
    _same(log, default_loss, caplog)
    rows = kernel.decode_stored(
        kernel.native(), [e.decision for e in log], [e.feedback for e in log], UID.encode(),
        default_loss, D,
    )  # fmt: skip
    status = rows[4]
    assert (status == kernel.STORED_LEARN).sum() >= 280  # the kernel reads the model's own


def test_a_log_of_json_records_learns_through_the_columns(caplog: pytest.LogCaptureFixture) -> None:
    """Every entry of an old log goes through the Python decoding: learned all the same,
    by the kernel (its rows filled from the decisions)."""
    from banditree.core.codec import decision_record, read_decision, record_json

    log = []
    for e in entries(100):
        d = read_decision(e.decision, UID) if e.decision.startswith("b1:") else None
        text = (
            e.decision if d is None else record_json({"uid": UID, "decision": decision_record(d)})
        )
        log.append(LogEntry(e.offset, e.event_id, text, e.feedback, e.acked_at))
    assert sum(e.decision.startswith("{") for e in log) > 90
    _same(log, None, caplog)
