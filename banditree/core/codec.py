"""The one codec of a decision: every form it travels in, and back.

* the **record** (:func:`decision_record`, :func:`column_records`,
  :func:`decision_from_record`): every field that is set, in field order, what a store
  keeps of a pending decision and a learner's buffer holds;
* the **full mapping** (:func:`decision_to_dict`): every field, None included;
* **JSON** (:func:`record_json`, :func:`decision_from_json`): the record as compact text;
* the **stored form** (:func:`decision_payload`, :func:`column_payloads`,
  :func:`read_decision`, :func:`feedback_json`): a pending decision's record under its
  model's ``uid`` and a feedback, as a store keeps them and a log entry holds them.  A
  classification decision with a context of numbers is stored **binary**
  (:func:`binary_payload`: a fixed little-endian header, the context's float64s, the
  uid, the event id and the extras, as hexadecimal text behind :data:`BINARY_PREFIX`,
  which every store keeps as it keeps JSON and CPython decodes 5x faster than base64); any
  other decision as JSON (``{"uid": ..., "decision": {...}}``).  Both are read, so logs
  written before the binary form are still learned;
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

import binascii
import functools
import math
import struct
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


#: what starts a binary stored decision (a JSON one starts with ``{``)
BINARY_PREFIX = "b1:"
#: the binary form's header, little-endian: version (1), flags (1: a leaf, 2: explored),
#: the byte lengths of the uid, the event id and the extras' JSON, the context's length,
#: a reserved zero, then model_version, action, greedy_action, leaf (0 when none),
#: perturbation and propensity; the context's float64s follow, then the uid, the event
#: id and the extras (UTF-8)
_HEAD = struct.Struct("<BBHHHIIqqqqqd")
_VERSION, _LEAF, _EXPLORED = 1, 1, 2
_MAX_FEATURES = 1 << 20  # a header claiming more is refused before any allocation
_PREFIX_LEN = len(BINARY_PREFIX)
_from_hex = binascii.a2b_hex


@functools.lru_cache(maxsize=64)
def _floats(n: int) -> struct.Struct:
    """The struct of ``n`` little-endian float64s (one per model's context length)."""
    return struct.Struct(f"<{n}d")


@functools.lru_cache(maxsize=256)
def _utf8(text: str) -> bytes:
    """A uid's UTF-8 (a process stores under a few uids)."""
    return text.encode()


def binary_payload(
    uid: str,
    event_id: str,
    context: Sequence[float],
    model_version: int,
    action: int,
    propensity: float,
    greedy_action: int,
    leaf: int | None,
    perturbation: int,
    explored: bool,
    extras: Mapping[str, float] | None,
) -> str | None:
    """The binary stored form of a classification decision, or None when its fields do
    not fit it (a number that is not one, an integer beyond 64 bits, a text over 64 KiB):
    that decision is stored as JSON."""
    if (
        type(explored) is not bool
        or type(model_version) is not int
        or type(action) is not int
        or type(greedy_action) is not int
        or type(perturbation) is not int
        or not (leaf is None or type(leaf) is int)
    ):  # a bool or a numpy number: JSON writes it as it is
        return None
    try:
        ub, eb = _utf8(uid), event_id.encode()
        xb = (
            orjson.dumps(extras, default=_json_default, option=orjson.OPT_SERIALIZE_NUMPY)
            if extras
            else b""
        )
        n = len(context)
        if n > _MAX_FEATURES:
            return None
        record = _record(n).pack(
            _VERSION, (_EXPLORED if explored else 0) | (_LEAF if leaf is not None else 0),
            len(ub), len(eb), len(xb), n, 0, model_version, action, greedy_action,
            0 if leaf is None else leaf, perturbation, propensity, *context,
        )  # fmt: skip
    except (
        struct.error,
        TypeError,
        ValueError,
        AttributeError,
        OverflowError,
        orjson.JSONEncodeError,
    ):
        return None
    return BINARY_PREFIX + b"".join((record, ub, eb, xb)).hex()


def _binary_fields(raw: bytes, at: int, size: int, uid: bytes) -> tuple[Any, ...] | None:
    """The fields of the binary stored decision at ``raw[at : at + size]`` (its context
    left in ``raw``), None when it is another model's; :class:`ValueError` naming what
    is wrong with a malformed one."""
    if size < _HEAD.size:
        raise ValueError(f"stored decision: {size} bytes, shorter than its header")
    (version, flags, ul, el, xl, n, reserved, model_version, action, greedy, leaf,
     perturbation, propensity) = _HEAD.unpack_from(raw, at)  # fmt: skip
    if version != _VERSION or reserved or flags & ~(_LEAF | _EXPLORED) or n > _MAX_FEATURES:
        raise ValueError("stored decision: unknown version or flags")
    start = at + _HEAD.size + 8 * n
    if size != start - at + ul + el + xl:
        raise ValueError("stored decision: its length does not match its header")
    if raw[start : start + ul] != uid:
        return None
    if not math.isfinite(propensity):
        raise ValueError("stored decision: propensity is not a finite number")
    start += ul
    try:
        event_id = raw[start : start + el].decode()
        extras = orjson.loads(raw[start + el : start + el + xl]) if xl else {}
    except (UnicodeDecodeError, orjson.JSONDecodeError) as err:
        raise ValueError(f"stored decision: {err}") from None
    if type(extras) is not dict:
        raise ValueError("stored decision: extras is not an object")
    return (
        n, event_id, model_version, action, propensity, greedy,
        leaf if flags & _LEAF else None, perturbation, bool(flags & _EXPLORED), extras,
    )  # fmt: skip


def _unhex(text: str) -> bytes:
    """The bytes of a stored decision's hexadecimal digits; :class:`ValueError` if none."""
    try:
        return _from_hex(text)
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"stored decision: not hexadecimal ({err})") from None


_new_decision = object.__new__


def _decision(fields: tuple[Any, ...], context: tuple[float, ...]) -> Decision:
    """The Decision of :func:`_binary_fields`' ``fields`` with ``context``."""
    (_, event_id, model_version, action, propensity, greedy, leaf, perturbation,
     explored, extras) = fields  # fmt: skip
    decision = _new_decision(Decision)
    _set_state(decision, "__dict__", {
        "event_id": event_id, "context": context, "model_version": model_version,
        "action": action, "propensity": propensity, "greedy_action": greedy, "value": None,
        "greedy_value": None, "perturbation": perturbation, "probes": None, "leaf": leaf,
        "explored": explored, "extras": extras, "ranking": None,
    })  # fmt: skip
    return decision


_set_state = object.__setattr__


def read_binary(payload: str, uid: str) -> Decision | None:
    """The decision of a binary stored form (:func:`binary_payload`), None when it is
    another model's; :class:`ValueError` when it is malformed or holds a context that is
    not finite (which JSON could not have held)."""
    raw = _unhex(payload[_PREFIX_LEN:])
    fields = _binary_fields(raw, 0, len(raw), _utf8(uid))
    if fields is None:
        return None
    context = _floats(fields[0]).unpack_from(raw, _HEAD.size)
    if not _finite(context):
        raise ValueError("stored decision: context holds a value that is not finite")
    return _decision(fields, context)


def read_binaries(payloads: Sequence[str], uid: str) -> list[Decision | ValueError | None]:
    """:func:`read_binary` of each of ``payloads`` (all binary): the hexadecimal digits
    of all of them decoded by one call and their contexts' finiteness checked by one
    numpy call; each item a decision, None (another model's) or the error."""
    import numpy as np  # banditree.core's import of numpy stays where it is used

    hexes = [p[_PREFIX_LEN:] for p in payloads]
    try:
        if any(len(h) & 1 for h in hexes):
            raise ValueError("odd")
        raw = _from_hex("".join(hexes))
    except (binascii.Error, ValueError):
        out_each: list[Decision | ValueError | None] = []
        for payload in payloads:
            try:
                out_each.append(read_binary(payload, uid))
            except ValueError as err:
                out_each.append(err)
        return out_each
    wanted, ul = _utf8(uid), len(_utf8(uid))
    uniform = _uniform(raw, len(payloads), wanted)
    if uniform is not None:
        return uniform  # type: ignore[return-value]
    out: list[Decision | ValueError | None] = []
    spans: list[bytes] = []
    at, head, n0 = 0, _HEAD.size, -1
    record = _HEAD
    isfinite, new, set_state = math.isfinite, _new_decision, _set_state
    for h in hexes:
        size = len(h) >> 1
        if size >= head and n0 < 0:  # the context's length of this batch's first record
            n0 = min(_HEAD.unpack_from(raw, at)[5], _MAX_FEATURES)
            record = _record(n0)
        end = at + head + 8 * n0
        values = record.unpack_from(raw, at) if n0 >= 0 and size >= end - at else None
        # the common record, read here whole (what _binary_fields checks, inline): this
        # model's uid, version 1, no unknown flag, the lengths adding up, no extras
        if (
            values is None
            or values[0] != _VERSION
            or values[1] & ~(_LEAF | _EXPLORED)
            or values[2] != ul
            or values[4]
            or values[5] != n0
            or values[6]
            or size != end - at + ul + values[3]
            or raw[end : end + ul] != wanted
            or not isfinite(values[12])
        ):
            try:
                fields = _binary_fields(raw, at, size, wanted)
                if fields is None:
                    out.append(None)
                else:
                    n = fields[0]
                    out.append(_decision(fields, _floats(n).unpack_from(raw, at + head)))
                    spans.append(raw[at + head : at + head + 8 * n])
            except ValueError as err:
                out.append(err)
            at += size
            continue
        try:
            event_id = raw[end + ul : at + size].decode()
        except UnicodeDecodeError as err:
            out.append(ValueError(f"stored decision: {err}"))
            at += size
            continue
        flags = values[1]
        decision = new(Decision)
        set_state(decision, "__dict__", {
            "event_id": event_id, "context": values[13:], "model_version": values[7],
            "action": values[8], "propensity": values[12], "greedy_action": values[9],
            "value": None, "greedy_value": None, "perturbation": values[11], "probes": None,
            "leaf": values[10] if flags & _LEAF else None, "explored": bool(flags & _EXPLORED),
            "extras": {}, "ranking": None,
        })  # fmt: skip
        out.append(decision)
        spans.append(raw[at + head : end])
        at += size
    if spans:
        if all(len(span) == 8 * n0 for span in spans):
            rows = np.frombuffer(b"".join(spans), dtype="<f8")
            if np.isfinite(rows).all():
                return out
        for i, item in enumerate(out):  # one not finite (or lengths differ): say which
            if isinstance(item, Decision) and not _finite(item.context):
                out[i] = ValueError("stored decision: context holds a value that is not finite")
    return out


def _uniform(raw: bytes, m: int, uid: bytes) -> list[Decision] | None:
    """The ``m`` decisions of ``raw`` when they are ``m`` records of one size, all this
    model's, well formed, finite and without extras (a model's log is): their headers
    checked and their columns read by numpy calls over all of them, a Python step per
    record only to make its Decision.  None otherwise: the caller reads them one by one
    (and names what is wrong with each)."""
    import numpy as np

    size, ul = len(raw) // m if m else 0, len(uid)
    if not m or size * m != len(raw) or size < _HEAD.size or not ul:
        return None
    n = _HEAD.unpack_from(raw, 0)[5]
    el = size - _HEAD.size - 8 * n - ul
    if n > _MAX_FEATURES or not 0 < el <= 0xFFFF:
        return None
    rows = np.frombuffer(raw, dtype=_columns_dtype(n, ul, el))
    flags = rows["flags"]
    context = rows["context"]
    if not (
        (rows["version"] == _VERSION).all()
        and not (flags & np.uint8(0xFF & ~(_LEAF | _EXPLORED))).any()
        and (rows["uid_len"] == ul).all()
        and (rows["event_len"] == el).all()
        and not rows["extras_len"].any()
        and (rows["n"] == n).all()
        and not rows["reserved"].any()
        and (rows["uid"] == np.frombuffer(uid, dtype=f"V{ul}")[0]).all()
        and np.isfinite(rows["propensity"]).all()
        and np.isfinite(context).all()
    ):
        return None
    try:
        ids = rows["event_id"].tobytes().decode()
    except UnicodeDecodeError:
        return None
    if len(ids) == m * el:  # ASCII: one character a byte
        event_ids = [ids[i : i + el] for i in range(0, m * el, el)]
    else:
        event_ids = [bytes(v).decode() for v in rows["event_id"]]
    has_leaf = (flags & _LEAF) != 0
    leaves: list[Any]
    if has_leaf.all():
        leaves = rows["leaf"].tolist()
    elif not has_leaf.any():
        leaves = [None] * m
    else:
        leaves = [
            v if on else None
            for v, on in zip(rows["leaf"].tolist(), has_leaf.tolist(), strict=True)
        ]
    contexts = _floats(n).iter_unpack(np.ascontiguousarray(context).tobytes()) if n else [()] * m
    new, set_state = _new_decision, _set_state
    out = []
    for e, c, v, a, g, leaf, t, p, x in zip(
        event_ids, contexts, rows["model_version"].tolist(), rows["action"].tolist(),
        rows["greedy_action"].tolist(), leaves, rows["perturbation"].tolist(),
        rows["propensity"].tolist(), ((flags & _EXPLORED) != 0).tolist(), strict=True,
    ):  # fmt: skip
        decision = new(Decision)
        set_state(decision, "__dict__", {
            "event_id": e, "context": c, "model_version": v, "action": a, "propensity": p,
            "greedy_action": g, "value": None, "greedy_value": None, "perturbation": t,
            "probes": None, "leaf": leaf, "explored": x, "extras": {}, "ranking": None,
        })  # fmt: skip
        out.append(decision)
    return out


def _finite(context: Any) -> bool:
    """Whether every number of a binary record's context (a tuple of floats) is finite."""
    return all(map(math.isfinite, context))


@functools.lru_cache(maxsize=64)
def _record(n: int) -> struct.Struct:
    """The header and ``n`` float64s, one struct (what most records are)."""
    return struct.Struct(_HEAD.format + f"{n}d")


def _binary_of(uid: str, d: Decision) -> str | None:
    """:func:`binary_payload` of a decision, None when it is not one the form holds."""
    if (
        d.action is None
        or d.greedy_action is None
        or d.value is not None
        or d.greedy_value is not None
        or d.probes is not None
        or d.ranking is not None
        or isinstance(d.context, dict)
    ):
        return None
    return binary_payload(
        uid, d.event_id, d.context, d.model_version, d.action, d.propensity, d.greedy_action,
        d.leaf, d.perturbation, d.explored, d.extras,
    )  # fmt: skip


def decision_payload(uid: str, decision: Decision) -> str:
    """The stored form of a pending decision: binary (:func:`binary_payload`) where the
    decision fits it, else its record (:func:`decision_record`) under the model's
    ``uid``, compact JSON."""
    binary = _binary_of(uid, decision)
    if binary is not None:
        return binary
    return record_json({"uid": uid, "decision": decision_record(decision)})


@functools.lru_cache(maxsize=64)
def _columns_dtype(n: int, uid_len: int, event_len: int) -> Any:
    """The numpy record of a binary stored decision with no extras: :data:`_HEAD`'s
    fields, ``n`` float64s, the uid and an event id of ``event_len`` bytes, packed."""
    import numpy as np

    return np.dtype([
        ("version", "u1"), ("flags", "u1"), ("uid_len", "<u2"), ("event_len", "<u2"),
        ("extras_len", "<u2"), ("n", "<u4"), ("reserved", "<u4"), ("model_version", "<i8"),
        ("action", "<i8"), ("greedy_action", "<i8"), ("leaf", "<i8"), ("perturbation", "<i8"),
        ("propensity", "<f8"), ("context", "<f8", (n,)), ("uid", f"V{uid_len}"),
        ("event_id", f"V{event_len}"),
    ])  # fmt: skip


#: the fewest rows written as one record array: its fixed cost (a dozen numpy calls)
#: is repaid from about 16 rows on; a tick of a few predicts goes row by row (per row:
#: 14.8 us as an array of 1, 2.3 us of 8, 1.0 us of 32, 0.70 us of 256; row by row
#: 1.2-1.5 us, the JSON it replaces 1.1-1.7 us)
_WHOLE_BATCH = 32


def _ints(values: Sequence[Any]) -> bool:
    """Whether ``values`` are all ints (not bools, which JSON keeps as ``true``)."""
    return set(map(type, values)) <= {int}


def _binary_columns(uid: str, columns: DecisionColumns) -> list[str] | None:
    """:func:`binary_payload` of every row of a classification batch without extras,
    written as one numpy record array and cut into its rows' texts (what one call per
    row costs three times over); None when the batch does not fit one array (event ids
    of several lengths, contexts of several, a value :func:`binary_payload` refuses):
    then the rows go one by one."""
    import numpy as np

    event_ids = [e.encode() for e in columns.event_ids]
    lengths = set(map(len, event_ids))
    n, ub, version = len(event_ids), _utf8(uid), columns.model_version
    action, greedy = columns.action, columns.greedy_action
    leaf, perturbation = columns.leaf, columns.perturbation
    assert action is not None and greedy is not None and columns.propensity is not None
    if (
        not n
        or len(lengths) != 1
        or len(ub) > 0xFFFF
        or type(version) is not int
        or not (_ints(action) and _ints(greedy))
        or not (leaf is None or _ints(leaf))
        or not (perturbation is None or _ints(perturbation))
        or set(map(type, columns.explored)) != {bool}
    ):
        return None
    try:
        given = columns.context_array  # the learner's float64 copy: no second one
        contexts = (
            given
            if isinstance(given, np.ndarray) and given.dtype == np.float64 and len(given) == n
            else np.array(columns.contexts, dtype=np.float64)
        )
        if contexts.ndim != 2 or contexts.shape[1] > _MAX_FEATURES or max(lengths) > 0xFFFF:
            return None
        rows = np.zeros(n, _columns_dtype(contexts.shape[1], len(ub), max(lengths)))
        rows["version"] = _VERSION
        explored = np.array(columns.explored, dtype=np.uint8) * _EXPLORED
        rows["flags"] = explored if leaf is None else explored | _LEAF
        rows["uid_len"], rows["event_len"] = len(ub), max(lengths)
        rows["n"] = contexts.shape[1]
        rows["model_version"] = version
        rows["action"], rows["greedy_action"] = action, greedy
        if leaf is not None:
            rows["leaf"] = leaf
        if perturbation is not None:
            rows["perturbation"] = perturbation
        rows["propensity"] = np.array(columns.propensity, dtype=np.float64)
        rows["context"] = contexts
        rows["uid"] = np.frombuffer(ub, dtype=f"V{len(ub)}")[0] if ub else rows["uid"]
        rows["event_id"] = np.frombuffer(b"".join(event_ids), dtype=f"V{max(lengths)}")
    except (TypeError, ValueError, OverflowError):
        return None
    text = rows.tobytes().hex()
    size = 2 * rows.dtype.itemsize
    prefix = BINARY_PREFIX
    return [prefix + text[i : i + size] for i in range(0, n * size, size)]


def column_payloads(uid: str, columns: DecisionColumns) -> list[str]:
    """:func:`decision_payload` of every row of ``columns``, without a Decision per row."""
    n = len(columns)
    if (
        columns.action is not None
        and columns.propensity is not None
        and columns.greedy_action is not None
        and columns.value is None
        and columns.greedy_value is None
        and columns.probes is None
        and not any(isinstance(c, dict) for c in columns.contexts)
    ):
        if not columns.extras and n >= _WHOLE_BATCH:
            whole = _binary_columns(uid, columns)
            if whole is not None:
                return whole
        extras = columns.row_extras() if columns.extras else [None] * n
        leaves: Sequence[int | None] = [None] * n if columns.leaf is None else columns.leaf
        perturbation = columns.perturbation if columns.perturbation is not None else [0] * n
        v = columns.model_version
        out = [
            binary_payload(uid, e, c, v, a, p, g, leaf, t, x, ex)
            for e, c, a, p, g, leaf, t, x, ex in zip(
                columns.event_ids, columns.contexts, columns.action, columns.propensity,
                columns.greedy_action, leaves, perturbation, columns.explored, extras,
                strict=True,
            )
        ]  # fmt: skip
        if None not in out:
            return out  # type: ignore[return-value]
    dumps = orjson.dumps
    head = '{"uid":' + dumps(uid).decode() + ',"decision":'
    return [head + dumps(row).decode() + "}" for row in column_records(columns)]


def read_decision(payload: str, uid: str) -> Decision | None:
    """The decision of ``payload`` (binary or JSON), or None when it belongs to another
    model (``uid``); :class:`ValueError` (or the record's own error) when malformed."""
    if payload.startswith(BINARY_PREFIX):
        return read_binary(payload, uid)
    data = orjson.loads(payload)
    if data.get("uid") != uid:
        return None
    return decision_from_record(data["decision"])


def feedback_json(feedback: Feedback) -> str:
    """The stored form of a feedback."""
    return orjson.dumps(feedback.to_dict()).decode()
