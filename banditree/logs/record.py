"""One row of the interaction log: a decision joined with its feedback.

The wire form (NDJSON, one JSON object per line) is::

    {"offset": 17, "event_id": "9f..", "time_seconds": 1763900000.25, "model_version": 40,
     "context": [0.1, 0.5], "action": 2, "propensity": 0.85, "greedy_action": 2,
     "loss": 0.0, "value": null, "greedy_value": null, "perturbation": 0, "probes": null,
     "losses": null, "source": "feedback"}

* ``offset`` - position in the model's log (strictly increasing; ``since`` / ``until``
  of the export endpoint are offsets);
* ``time_seconds`` - unix time the feedback was joined to its decision;
* ``model_version`` - parameter updates of the model that decided;
* ``context`` - the raw context as the caller sent it: a list of numbers, or the
  JSON object of named features of a model with features (NDJSON only);
* classification: ``action`` played with probability ``propensity`` (1 for an
  apprentice-mode decision, which plays the caller's default), ``greedy_action`` the
  model's own best action;
* regression: ``value`` played (``greedy_value + delta * perturbation`` for one-point
  feedback) or ``probes`` ``[value + delta, value - delta]`` of a two-point query;
* ``loss`` (or ``losses`` of the two probes) - what the caller reported;
* ``source`` - ``feedback``, or ``expired`` when the default loss was applied;
* ``ranking`` - a ranking model's rows only: the candidate set
  (:mod:`banditree.ranking.model` describes it); ``context`` is then empty and
  ``action`` indexes the candidate played.

The flat form (CSV, Parquet) has the same fields with ``context`` spread over
``x0..x{d-1}``, ``probes`` over ``probe_plus, probe_minus`` and ``losses`` over
``loss_plus, loss_minus`` (see :data:`FLAT_COLUMNS`).
"""

from __future__ import annotations

import math
from typing import Any

from banditree.learners import Decision, Feedback

#: Flat columns before the context columns ``x0..x{d-1}``, in file order.
FLAT_COLUMNS: tuple[str, ...] = (
    "offset",
    "event_id",
    "time_seconds",
    "model_version",
    "action",
    "propensity",
    "greedy_action",
    "loss",
    "value",
    "greedy_value",
    "perturbation",
    "probe_plus",
    "probe_minus",
    "loss_plus",
    "loss_minus",
    "source",
)
SOURCES = ("feedback", "expired")


def log_row(
    decision: Decision,
    feedback: Feedback,
    *,
    offset: int,
    time_seconds: float,
    source: str = "feedback",
) -> dict[str, Any]:
    """The wire form of one joined log entry (see the module docstring)."""
    row = {
        "offset": int(offset),
        "event_id": decision.event_id,
        "time_seconds": float(time_seconds),
        "model_version": int(decision.model_version),
        # a model with named features logs the JSON object it was sent
        "context": decision.context
        if isinstance(decision.context, dict)
        else list(decision.context),
        "action": decision.action,
        "propensity": float(decision.propensity),
        "greedy_action": decision.greedy_action,
        "loss": feedback.loss,
        "value": decision.value,
        "greedy_value": decision.greedy_value,
        "perturbation": int(decision.perturbation),
        "probes": None if decision.probes is None else list(decision.probes),
        "losses": None if feedback.losses is None else list(feedback.losses),
        "source": source,
    }
    if decision.ranking is not None:  # a ranking model's candidate set (other rows unchanged)
        row["ranking"] = decision.ranking
    return row


def validate_row(row: dict[str, Any], where: str = "row") -> None:
    """Raise ``ValueError`` naming the field when ``row`` is not a valid wire-form row."""
    for key in ("offset", "event_id", "context"):
        if key not in row or row[key] is None:
            raise ValueError(f"{where}: field {key!r} is required")
    context = row["context"]
    if isinstance(context, dict):
        pass  # named features (a model with features): its encoder checks the values
    elif not isinstance(context, list) or not context:
        raise ValueError(f"{where}: field 'context' must be a non-empty list of numbers")
    elif not all(isinstance(v, int | float) and math.isfinite(v) for v in context):
        raise ValueError(f"{where}: field 'context' must hold finite numbers")
    propensity = row.get("propensity", 1.0)
    if propensity is None or not 0.0 < float(propensity) <= 1.0:
        raise ValueError(f"{where}: field 'propensity' must be in (0, 1], got {propensity}")
    if row.get("loss") is None and row.get("losses") is None:
        raise ValueError(f"{where}: give 'loss' (or 'losses' for a two-point query)")
    source = row.get("source", "feedback")
    if source not in SOURCES:
        raise ValueError(f"{where}: field 'source' must be one of {SOURCES}, got {source!r}")


def flatten_row(row: dict[str, Any]) -> dict[str, Any]:
    """The flat (CSV / Parquet) form of a wire-form row."""
    probes, losses = row.get("probes"), row.get("losses")
    flat = {k: row.get(k) for k in FLAT_COLUMNS}
    flat["probe_plus"], flat["probe_minus"] = probes if probes is not None else (None, None)
    flat["loss_plus"], flat["loss_minus"] = losses if losses is not None else (None, None)
    flat["perturbation"] = int(row.get("perturbation") or 0)
    flat["source"] = row.get("source") or "feedback"
    for j, v in enumerate(row["context"]):
        flat[f"x{j}"] = v
    return flat
