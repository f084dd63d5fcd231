"""Applying log entries to a learner: the one code path of the learner, restarts and audits.

A log entry is a stored decision (``{"uid": ..., "decision": {...}}``) with the JSON of
its feedback, or no feedback for a decision that expired (the model's default loss is
applied then, when it has one).  :func:`replay` rebuilds a model offline from an
exported log; the live learner runs the same :func:`apply_entry`, so both make the same
floating-point operations in the same order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from banditree.core.codec import (
    column_records,
    decision_from_record,
    decision_record,
    record_json,
)
from banditree.learners import (
    Decision,
    DecisionColumns,
    Feedback,
    InvalidInput,
    Learner,
    build_learner,
)
from service.store import LogEntry

log = logging.getLogger("banditree.service")


def decision_payload(uid: str, decision: Decision) -> str:
    """The stored form of a pending decision: its record (:func:`decision_record`) under
    the model's ``uid``, compact JSON."""
    return record_json({"uid": uid, "decision": decision_record(decision)})


def column_payloads(uid: str, columns: DecisionColumns) -> list[str]:
    """:func:`decision_payload` of every row of ``columns``, without a Decision per row."""
    dumps = orjson.dumps
    return [dumps({"uid": uid, "decision": row}).decode() for row in column_records(columns)]


def read_decision(payload: str, uid: str) -> Decision | None:
    """The decision of ``payload``, or None when it belongs to another model (``uid``)."""
    data = orjson.loads(payload)
    if data.get("uid") != uid:
        return None
    return decision_from_record(data["decision"])


def feedback_json(feedback: Feedback) -> str:
    """The stored form of a feedback."""
    return orjson.dumps(feedback.to_dict()).decode()


def default_feedback(decision: Decision, default_loss: float | None) -> Feedback | None:
    """The feedback of an expired decision: the default loss, or None (nothing to learn)."""
    if default_loss is None:
        return None
    if decision.probes is not None:
        return Feedback(losses=(default_loss, default_loss))
    return Feedback(loss=default_loss)


@dataclass(frozen=True)
class Applied:
    """What one entry did: learned from (``learned``), changed the parameters (``changed``)."""

    learned: bool
    changed: bool


def apply_entry(
    learner: Learner, entry: LogEntry, *, uid: str, default_loss: float | None
) -> Applied:
    """Learn from one log entry; entries that cannot be learned from are skipped, logged."""
    try:
        decision = read_decision(entry.decision, uid)
        if decision is None:
            return Applied(False, False)
        if entry.feedback is None:
            feedback = default_feedback(decision, default_loss)
        else:
            feedback = Feedback.from_dict(orjson.loads(entry.feedback))
        if feedback is None:
            return Applied(False, False)
        return Applied(True, learner.learn(decision, feedback))
    except (InvalidInput, ValueError, KeyError, TypeError) as err:
        log.warning("log entry %d (%s) skipped: %s", entry.offset, entry.event_id, err)
        return Applied(False, False)


def replay(
    config: dict[str, Any],
    entries: Iterable[LogEntry],
    *,
    uid: str,
    default_loss: float | None,
    learner: Learner | None = None,
) -> Learner:
    """A learner built from ``config`` (or ``learner``) after applying ``entries`` in order."""
    model = learner if learner is not None else build_learner(config)
    for entry in entries:
        apply_entry(model, entry, uid=uid, default_loss=default_loss)
    return model
