"""The learner's batched reading of its log gives what reading entry by entry gives.

``decode_entries`` (one JSON call per batch) against ``decode_entry``, odd entries
included, and ``apply_slice`` (decoded and learned in chunks) against ``replay``.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import orjson
import pytest

from banditree.core.codec import decision_payload, feedback_json
from banditree.learners import Feedback, build_learner
from service.domain.runtime.learner_steps import apply_slice
from service.domain.runtime.replay import decode_entries, decode_entry, replay
from service.store import LogEntry
from service.telemetry.metrics import ServiceMetrics

CONFIG = {"kind": "dgt", "n_features": 4, "n_actions": 3, "height": 2, "accumulate": 2, "seed": 1}
UID = "u1"


def entries(n: int = 200) -> list[LogEntry]:
    """A model's log: decisions and feedbacks, with odd entries among them."""
    rng = np.random.default_rng(4)
    actor = build_learner(CONFIG)
    out: list[LogEntry] = []

    def add(decision: str, feedback: str | None) -> None:
        out.append(LogEntry(len(out) + 1, f"e{len(out)}", decision, feedback, 1.0))

    for i in range(n):
        d = actor.act(rng.normal(size=4))
        add(decision_payload(UID, d), feedback_json(Feedback(loss=float(rng.random() < 0.5))))
        if i % 31 == 1:
            add(decision_payload("another-model", d), feedback_json(Feedback(loss=0.0)))
        if i % 37 == 2:
            add(decision_payload(UID, d), None)  # expired
        if i % 41 == 3:
            add(decision_payload(UID, d), '{"loss": "high"}')  # refused by Feedback
        if i % 43 == 4:
            add(decision_payload(UID, d), '{"losses": [0.1, 0.2]}')  # refused by learn
        if i % 47 == 5:
            add('{"uid": "u1", "decision": [1, 2]}', feedback_json(Feedback(loss=0.0)))
        if i % 53 == 6:  # a field no decision has, then one missing: refused, named
            unknown = {"event_id": "x", "context": [1, 2, 3, 4], "model_version": 0, "hue": 1}
            add(orjson.dumps({"uid": UID, "decision": unknown}).decode(), '{"loss": 1}')
            del unknown["hue"], unknown["model_version"]
            add(orjson.dumps({"uid": UID, "decision": unknown}).decode(), '{"loss": 1}')
    return out


@pytest.mark.parametrize("default_loss", [None, 0.75])
def test_decode_entries_equals_decode_entry(
    default_loss: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    log = entries()
    with caplog.at_level(logging.WARNING, logger="banditree.service"):
        one = [decode_entry(e, uid=UID, default_loss=default_loss) for e in log]
        singly = [r.getMessage() for r in caplog.records]
        caplog.clear()
        batch = decode_entries(log, uid=UID, default_loss=default_loss)
        batched = [r.getMessage() for r in caplog.records]
    assert batch == one
    assert batched == singly and singly  # the same skipped entries, named the same way
    assert sum(p is None for p in one) > 5 and sum(p is not None for p in one) > 150


def test_a_batch_that_is_not_json_is_read_entry_by_entry() -> None:
    log = entries(30)
    log[4] = LogEntry(log[4].offset, log[4].event_id, '{"uid": "u1", "decision": {', "{}", 1.0)
    log[9] = LogEntry(log[9].offset, log[9].event_id, log[9].decision, "1, 2", 1.0)
    expected = [decode_entry(e, uid=UID, default_loss=None) for e in log]
    assert decode_entries(log, uid=UID, default_loss=None) == expected
    assert expected[4] is None and expected[9] is None


@pytest.mark.parametrize("default_loss", [None, 0.75])
def test_apply_slice_learns_what_replay_learns(default_loss: float | None) -> None:
    log = entries()
    offline = replay(CONFIG, log, uid=UID, default_loss=default_loss)
    live = build_learner(CONFIG)
    metrics = ServiceMetrics().for_model("m")
    rest = log
    while rest:  # as the learner does: what a slice did not reach comes back next
        done, _ = apply_slice(live, rest, uid=UID, default_loss=default_loss, metrics=metrics)
        rest = rest[done:]
    a, b = offline.state()[0], live.state()[0]
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert live.version == offline.version > 0


def test_a_log_entry_is_a_frozen_value() -> None:
    entry = LogEntry(3, "e3", "d", None, 1.5)
    assert entry == LogEntry(offset=3, event_id="e3", decision="d", feedback=None, acked_at=1.5)
    assert hash(entry) == hash(LogEntry(3, "e3", "d", None, 1.5))
    assert list(vars(entry)) == ["offset", "event_id", "decision", "feedback", "acked_at"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.offset = 4  # type: ignore[misc]
