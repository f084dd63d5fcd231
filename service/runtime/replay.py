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


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def decision_payload(uid: str, decision: Decision) -> str:
    """The stored form of a pending decision (compact JSON; numpy scalars as numbers).

    Fields that are None are left out (:meth:`Decision.from_dict` gives them back), so a
    classification decision stores no regression fields: smaller rows, less to write.
    """
    fields = {key: value for key, value in vars(decision).items() if value is not None}
    data = {"uid": uid, "decision": fields}
    return orjson.dumps(data, default=_json_default, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def column_payloads(uid: str, columns: DecisionColumns) -> list[str]:
    """:func:`decision_payload` of every row of ``columns``, without a Decision per row.

    The same keys in the same order (a column that is None in every row is left out;
    ``propensity`` and ``perturbation`` take their defaults when absent, as a Decision
    does), so the stored text is the same.
    """
    n = len(columns)
    extras = columns.row_extras() if columns.extras else [{}] * n  # read only
    dumps = orjson.dumps
    if (
        columns.action is not None
        and columns.propensity is not None
        and columns.greedy_action is not None
        and columns.perturbation is not None
        and columns.value is None
        and columns.greedy_value is None
        and columns.probes is None
    ):  # classification: one dict literal per row
        v = columns.model_version
        rows = zip(
            columns.event_ids, columns.contexts, columns.action, columns.propensity,
            columns.greedy_action, columns.perturbation, columns.explored, extras, strict=True,
        )  # fmt: skip
        if columns.leaf is None:
            return [
                dumps({"uid": uid, "decision": {
                    "event_id": e, "context": c, "model_version": v, "action": a,
                    "propensity": p, "greedy_action": g, "perturbation": t, "explored": x,
                    "extras": ex,
                }}).decode()
                for e, c, a, p, g, t, x, ex in rows
            ]  # fmt: skip
        return [
            dumps({"uid": uid, "decision": {
                "event_id": e, "context": c, "model_version": v, "action": a, "propensity": p,
                "greedy_action": g, "perturbation": t, "leaf": leaf, "explored": x, "extras": ex,
            }}).decode()
            for (e, c, a, p, g, t, x, ex), leaf in zip(rows, columns.leaf, strict=True)
        ]  # fmt: skip
    named: list[tuple[str, list[Any]]] = [
        ("event_id", columns.event_ids),
        ("context", columns.contexts),
        ("model_version", [columns.model_version] * n),
    ]
    for key, column in (
        ("action", columns.action),
        ("propensity", columns.propensity if columns.propensity is not None else [1.0] * n),
        ("greedy_action", columns.greedy_action),
        ("value", columns.value),
        ("greedy_value", columns.greedy_value),
        ("perturbation", columns.perturbation if columns.perturbation is not None else [0] * n),
        ("probes", columns.probes),
        ("leaf", columns.leaf),
    ):
        if column is not None:
            named.append((key, column))
    named += [("explored", columns.explored), ("extras", extras)]
    keys = [key for key, _ in named]
    return [
        dumps({"uid": uid, "decision": dict(zip(keys, row, strict=True))}).decode()
        for row in zip(*[column for _, column in named], strict=True)
    ]


def read_decision(payload: str, uid: str) -> Decision | None:
    """The decision of ``payload``, or None when it belongs to another model (``uid``)."""
    data = orjson.loads(payload)
    if data.get("uid") != uid:
        return None
    return Decision.from_dict(data["decision"])


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
