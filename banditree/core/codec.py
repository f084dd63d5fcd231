"""The one codec of a decision: every form it travels in, and back.

* the **record** (:func:`decision_record`, :func:`column_records`,
  :func:`decision_from_record`): every field that is set, in field order, what a store
  keeps of a pending decision and a learner's buffer holds;
* the **full mapping** (:func:`decision_to_dict`): every field, None included;
* **JSON** (:func:`record_json`, :func:`decision_from_json`): the record as compact text;
* the **stored form** (:func:`decision_payload`, :func:`column_payloads`,
  :func:`read_decision`, :func:`feedback_json`): a pending decision's record under its
  model's ``uid`` and a feedback, as a store keeps them and a log entry holds them;
* the **public answer** (:func:`decision_public`, :func:`columns_public`,
  :func:`public_fields`, :func:`decision_from_public`): what ``POST /predict`` answers
  and a client reads, ``probability`` for the propensity, classification or regression
  fields only;
* **columns**: :class:`~banditree.core.columns.DecisionColumns` (``rows`` and
  ``from_decisions``), written out here row by row without a Decision per row.

The service's stored records, its answers, the client and the simulator all go through
these functions, so the forms cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback

#: the fields of a public answer, in the order a client reads them
PUBLIC_FIELDS = (
    "event_id",
    "model_version",
    "leaf",
    "action",
    "probability",
    "greedy_action",
    "value",
    "greedy_value",
    "probes",
)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


#: every field, None included (:meth:`Decision.to_dict`)
decision_to_dict = Decision.to_dict


def decision_record(d: Decision) -> dict[str, Any]:
    """The fields that are set, in field order (a classification decision stores no
    regression fields: smaller rows, less to write); :func:`decision_from_record` gives
    the others back."""
    return {key: value for key, value in vars(d).items() if value is not None}


#: the decision of a record or of a full mapping (:meth:`Decision.from_dict`: numbers as
#: floats, tuples back)
decision_from_record = Decision.from_dict


def decision_from_parsed(record: dict[str, Any]) -> Decision:
    """:func:`decision_from_record` of a record that no one else holds (JSON just parsed):
    converted in place rather than copied, the same decision."""
    context = record["context"]
    if not isinstance(context, dict):
        record["context"] = tuple(map(float, context))
    probes = record.get("probes")
    if probes is not None:
        lo, hi = probes
        record["probes"] = (float(lo), float(hi))
    extras = record.get("extras")
    record["extras"] = dict(extras) if extras else {}
    return Decision.from_fields(record)


def record_json(envelope: Mapping[str, Any]) -> str:
    """Compact JSON of a mapping holding records (numpy scalars written as numbers)."""
    return orjson.dumps(envelope, default=_json_default, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def decision_from_json(text: str | bytes) -> Decision:
    """The decision of :func:`record_json` applied to a record."""
    return decision_from_record(orjson.loads(text))


def column_records(columns: DecisionColumns) -> list[dict[str, Any]]:
    """:func:`decision_record` of every row of ``columns``, without a Decision per row.

    The same keys in the same order (a column that is None in every row is left out;
    ``propensity`` and ``perturbation`` take their defaults when absent, as a Decision
    does), so the stored text is the same.
    """
    n = len(columns)
    extras = columns.row_extras() if columns.extras else [{}] * n  # read only
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
                {"event_id": e, "context": c, "model_version": v, "action": a,
                 "propensity": p, "greedy_action": g, "perturbation": t, "explored": x,
                 "extras": ex}
                for e, c, a, p, g, t, x, ex in rows
            ]  # fmt: skip
        return [
            {"event_id": e, "context": c, "model_version": v, "action": a, "propensity": p,
             "greedy_action": g, "perturbation": t, "leaf": leaf, "explored": x, "extras": ex}
            for (e, c, a, p, g, t, x, ex), leaf in zip(rows, columns.leaf, strict=True)
        ]  # fmt: skip
    named: list[tuple[str, Sequence[Any]]] = [
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
    return [dict(zip(keys, row, strict=True)) for row in zip(*[c for _, c in named], strict=True)]


def decision_public(d: Decision) -> dict[str, Any]:
    """The public answer of a decision: one dict literal per decision (the hot path)."""
    if d.action is not None:
        return {
            "event_id": d.event_id,
            "model_version": d.model_version,
            "leaf": d.leaf,
            "action": d.action,
            "probability": d.propensity,
            "greedy_action": d.greedy_action,
        }
    out: dict[str, Any] = {
        "event_id": d.event_id,
        "model_version": d.model_version,
        "leaf": d.leaf,
        "value": d.value,
        "greedy_value": d.greedy_value,
    }
    if d.probes is not None:
        out["probes"] = list(d.probes)
    return out


def columns_public(columns: DecisionColumns) -> list[dict[str, Any]]:
    """:func:`decision_public` of every row of ``columns`` (no Decision object per row)."""
    n, version = len(columns), columns.model_version
    leaves: list[int | None] = [None] * n if columns.leaf is None else list(columns.leaf)
    if columns.action is not None:
        assert columns.propensity is not None and columns.greedy_action is not None
        return [
            {"event_id": event_id, "model_version": version, "leaf": leaf, "action": action,
             "probability": probability, "greedy_action": greedy}
            for event_id, leaf, action, probability, greedy in zip(
                columns.event_ids, leaves, columns.action, columns.propensity,
                columns.greedy_action, strict=True,
            )
        ]  # fmt: skip
    assert columns.value is not None and columns.greedy_value is not None
    rows: list[dict[str, Any]] = [
        {"event_id": event_id, "model_version": version, "leaf": leaf, "value": value,
         "greedy_value": greedy}
        for event_id, leaf, value, greedy in zip(
            columns.event_ids, leaves, columns.value, columns.greedy_value, strict=True
        )
    ]  # fmt: skip
    if columns.probes is not None:
        for row, probes in zip(rows, columns.probes, strict=True):
            row["probes"] = list(probes)
    return rows


def public_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`PUBLIC_FIELDS` of a public answer, typed (absent ones None)."""
    probes = data.get("probes")
    return {
        "event_id": str(data["event_id"]),
        "model_version": int(data.get("model_version", 0)),
        "leaf": data.get("leaf"),
        "action": data.get("action"),
        "probability": data.get("probability"),
        "greedy_action": data.get("greedy_action"),
        "value": data.get("value"),
        "greedy_value": data.get("greedy_value"),
        "probes": None if probes is None else (float(probes[0]), float(probes[1])),
    }


def decision_from_public(data: Mapping[str, Any], context: Sequence[float]) -> Decision:
    """The decision behind a public answer for ``context`` (the answer does not repeat it)."""
    fields = public_fields(data)
    probability = fields["probability"]
    return Decision(
        event_id=fields["event_id"],
        context=tuple(float(v) for v in context),
        model_version=fields["model_version"],
        action=fields["action"],
        propensity=1.0 if probability is None else probability,
        greedy_action=fields["greedy_action"],
        value=fields["value"],
        greedy_value=fields["greedy_value"],
        probes=fields["probes"],
        leaf=fields["leaf"],
    )


def decision_payload(uid: str, decision: Decision) -> str:
    """The stored form of a pending decision: its record (:func:`decision_record`) under
    the model's ``uid``, compact JSON."""
    return record_json({"uid": uid, "decision": decision_record(decision)})


def column_payloads(uid: str, columns: DecisionColumns) -> list[str]:
    """:func:`decision_payload` of every row of ``columns``, without a Decision per row
    (the envelope's head written once, each row's record dumped into it)."""
    dumps = orjson.dumps
    head = '{"uid":' + dumps(uid).decode() + ',"decision":'
    return [head + dumps(row).decode() + "}" for row in column_records(columns)]


def read_decision(payload: str, uid: str) -> Decision | None:
    """The decision of ``payload``, or None when it belongs to another model (``uid``)."""
    data = orjson.loads(payload)
    if data.get("uid") != uid:
        return None
    return decision_from_record(data["decision"])


def feedback_json(feedback: Feedback) -> str:
    """The stored form of a feedback."""
    return orjson.dumps(feedback.to_dict()).decode()
