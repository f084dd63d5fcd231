"""Vowpal Wabbit's decision-service JSON (DSJson) of a ranking model's log rows.

One line per decision, as Personalizer's log exports and ``vw --dsjson --cb_explore_adf``
read them::

    {"_label_cost": 0.0, "_label_probability": 0.8, "_label_Action": 2, "_labelIndex": 1,
     "Timestamp": "2026-11-24T12:00:00.000000Z", "Version": "1", "EventId": "e1",
     "a": [2, 1, 3], "c": {"user": {"name": "ann"}, "_multi": [{...}, {...}, {...}]},
     "p": [0.8, 0.1, 0.1], "VWState": {"m": "40"}}

* ``_label_cost`` is the row's loss (``1 - reward``); ``_label_probability`` the played
  candidate's probability; ``_labelIndex`` its 0-based index in ``_multi``,
  ``_label_Action`` the same 1-based;
* ``a`` holds the 1-based candidate indices in ranking order (the played one first) and
  ``p`` their probabilities in that order;
* ``c`` is the context (nested objects are VW namespaces) with the candidates' features
  in ``_multi``, each with its id under ``_id`` (ignored by VW, read back by
  :func:`row_from_dsjson`);
* ``_skipLearn: true`` marks an event that was deferred and never activated;
* ``VWState.m`` is the model version that decided.

Feature values become what VW's JSON parser takes: numbers and booleans as they are, a
string as a categorical (``name=value``), a list (tags) as an object ``{tag: 1}``,
nulls left out; a multi-slot decision's ``_slot`` namespace is written as ``slot``
(VW ignores keys starting with ``_``).  Each slot of a multi-slot event is a line of
its own (``EventId`` ``{eventId}#{i}``).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson


def _vw_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _vw_object(value)
    if isinstance(value, list | tuple):
        return {str(tag): 1 for tag in value}
    return value


def _vw_object(features: Mapping[str, Any]) -> dict[str, Any]:
    """``features`` as VW's JSON parser reads them (see the module docstring)."""
    out: dict[str, Any] = {}
    for key, value in features.items():
        if value is None:
            continue
        name = "slot" if key == "_slot" else key
        out[name] = _vw_value(value)
    return out


def _timestamp(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dsjson_event(row: Mapping[str, Any]) -> dict[str, Any]:
    """The DSJson event of one wire-form log row of a ranking model.

    Raises ``ValueError`` naming the row for a row without a candidate set (a
    classification or regression model's row).
    """
    ranking = row.get("ranking")
    if not isinstance(ranking, Mapping):
        raise ValueError(
            f"row offset {row.get('offset')}: DSJson export is for ranking models "
            "(this row has no candidate set)"
        )
    chosen = int(row["action"])
    ids, probabilities = list(ranking["ids"]), [float(p) for p in ranking["probabilities"]]
    order = [
        chosen,
        *sorted((i for i in range(len(ids)) if i != chosen), key=lambda i: (-probabilities[i], i)),
    ]
    context = _vw_object(ranking.get("context") or {})
    context["_multi"] = [
        {"_id": ids[i], **_vw_object(features or {})}
        for i, features in enumerate(ranking["features"])
    ]
    event: dict[str, Any] = {
        "_label_cost": float(row["loss"]),
        "_label_probability": probabilities[chosen],
        "_label_Action": chosen + 1,
        "_labelIndex": chosen,
        "Timestamp": _timestamp(float(row.get("time_seconds") or 0.0)),
        "Version": "1",
        "EventId": str(row["event_id"]),
        "a": [i + 1 for i in order],
        "c": context,
        "p": [probabilities[i] for i in order],
        "VWState": {"m": str(row.get("model_version", 0))},
    }
    if ranking.get("active", True) is False:
        event["_skipLearn"] = True
    return event


def row_from_dsjson(event: Mapping[str, Any], offset: int) -> dict[str, Any]:
    """The wire-form row of a DSJson event (this module's or Personalizer's export).

    Candidate ids are ``_id`` where the event has them, else ``"1"``, ``"2"``...; the
    loss is ``_label_cost``; a ``_skipLearn`` event is marked inactive.
    """
    try:
        context = dict(event["c"])
        multi = list(context.pop("_multi"))
        chosen = (
            int(event["_labelIndex"]) if "_labelIndex" in event else int(event["_label_Action"]) - 1
        )
        order = [int(a) - 1 for a in event["a"]]
        probabilities = [0.0] * len(multi)
        for i, p in zip(order, event["p"], strict=True):
            probabilities[i] = float(p)
        ids = [str(m.get("_id", i + 1)) for i, m in enumerate(multi)]
        features = [{k: v for k, v in m.items() if k != "_id"} for m in multi]
        loss = float(event["_label_cost"])
        propensity = float(event["_label_probability"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"DSJson event {offset}: not a cb_adf decision ({err!r})") from None
    if not 0 <= chosen < len(multi):
        raise ValueError(
            f"DSJson event {offset}: _labelIndex {chosen} outside the {len(multi)} candidates"
        )
    ranking: dict[str, Any] = {
        "context": context,
        "ids": ids,
        "features": features,
        "probabilities": probabilities,
    }
    if event.get("_skipLearn"):
        ranking["active"] = False
    state = event.get("VWState")
    version = str(state.get("m", "")) if isinstance(state, Mapping) else ""
    return {
        "offset": offset,
        "event_id": str(event.get("EventId", offset)),
        "time_seconds": 0.0,
        "model_version": int(version) if version.isdigit() else 0,
        "context": [],
        "action": chosen,
        "propensity": propensity,
        "greedy_action": max(range(len(multi)), key=lambda i: (probabilities[i], -i)),
        "loss": loss,
        "source": "feedback",
        "ranking": ranking,
    }


def read_dsjson(path: Path | str) -> Iterator[dict[str, Any]]:
    """The wire-form rows of a DSJson file, one per decision line (offsets from 1)."""
    with Path(path).open("rb") as lines:
        offset = 0
        for line in lines:
            if not line.strip():
                continue
            offset += 1
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise ValueError(f"{path}: line {offset} is not JSON ({err})") from None
            if not isinstance(event, Mapping):
                raise ValueError(f"{path}: line {offset} is not a JSON object")
            yield row_from_dsjson(event, offset)
