"""The binary stored decision: written by predict, learned as its JSON form is.

A classification decision is stored binary (``banditree.core.codec.binary_payload``);
logs written before (JSON records) are still read.  The same decisions written either
way learn to the same state, and a hostile or truncated record is refused with a
ValueError that names it: never a crash, never a non-finite number into a model.
"""

from __future__ import annotations

import logging
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree.core import Decision, DecisionColumns
from banditree.core.codec import (
    BINARY_PREFIX,
    binary_payload,
    column_payloads,
    decision_payload,
    decision_record,
    feedback_json,
    read_binaries,
    read_decision,
    record_json,
)
from banditree.learners import Feedback, build_learner
from banditree.learners.gradient_bandit.kernel_calls import use_reference
from service.domain.runtime.learner_steps import apply_slice
from service.domain.runtime.replay import decode_entries, decode_entry, entry_row
from service.store import LogEntry
from service.telemetry.metrics import ServiceMetrics

UID = "model-uid-1"
CONFIG = {"kind": "dgt", "n_features": 6, "n_actions": 4, "height": 3, "accumulate": 4, "seed": 3}


def json_payload(uid: str, decision: Decision) -> str:
    """The stored form the previous version wrote for every decision."""
    return record_json({"uid": uid, "decision": decision_record(decision)})


def decided(n: int, seed: int = 5) -> list[Decision]:
    rng = np.random.default_rng(seed)
    actor = build_learner(CONFIG)
    return [actor.act(rng.normal(size=6) * 10.0 ** rng.integers(-3, 4)) for _ in range(n)]


CLASSIFICATION = [
    Decision.of_action("e1", (0.5, -1.0), 3, 2, 0.25, 1, 7, {"reach": 1.5}),
    Decision.of_action("é-∂", (), 0, 0, 1.0, 0, None, {}),
    Decision.of_action("e3", tuple(float(i) for i in range(1000)), 2**62, 999, 1e-300, 0, 0, {}),
    Decision("e4", (1e300, -0.0, 5e-324), 1, action=1, propensity=0.5, greedy_action=1),
]


@pytest.mark.parametrize("decision", CLASSIFICATION)
def test_a_classification_decision_is_stored_binary_and_reads_back(decision: Decision) -> None:
    payload = decision_payload(UID, decision)
    assert payload.startswith(BINARY_PREFIX)
    back = read_decision(payload, UID)
    assert back == decision
    assert back is not None and vars(back) == vars(decision)  # field for field, types too
    assert read_decision(payload, "another") is None
    assert read_decision(json_payload(UID, decision), UID) == decision


@pytest.mark.parametrize(
    "decision",
    [
        Decision("r", (1.0,), 4, value=2.5, greedy_value=2.0, perturbation=1),
        Decision("t", (0.0, 2.0), 5, value=1.0, greedy_value=1.0, probes=(1.5, 0.5)),
        Decision.of_action("n", {"age": 3, "city": "x"}, 1, 0, 0.5, 0, None, {}),  # type: ignore[arg-type]
        Decision.of_action("b", (1.0,), 1, True, 0.5, 0, None, {}),  # a bool action: JSON keeps it
        Decision.of_action("x" * 70_000, (1.0,), 1, 0, 0.5, 0, None, {}),  # id over 64 KiB
    ],
)
def test_other_decisions_stay_json(decision: Decision) -> None:
    payload = decision_payload(UID, decision)
    assert payload.startswith("{")
    assert read_decision(payload, UID) == decision


def test_a_batch_is_written_as_its_rows_are() -> None:
    rows = decided(40)
    columns = DecisionColumns.from_decisions(rows)
    payloads = column_payloads(UID, columns)
    assert payloads == [decision_payload(UID, d) for d in rows]
    assert all(p.startswith(BINARY_PREFIX) for p in payloads)
    assert read_binaries(payloads, UID) == rows
    assert len(payloads[0]) < len(json_payload(UID, rows[0]))


def log_of(decisions: list[Decision], write, seed: int = 9) -> list[LogEntry]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    out = []
    for i, d in enumerate(decisions):
        feedback = None if i % 17 == 3 else feedback_json(Feedback(loss=float(rng.random())))
        out.append(LogEntry(i + 1, d.event_id, write(UID, d), feedback, 1.0))
    return out


def state_of(learner) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    tensors, _ = learner.state()
    return {k: np.asarray(v) for k, v in tensors.items()}


@pytest.mark.parametrize("default_loss", [None, 0.5])
def test_binary_and_json_logs_learn_to_the_same_state(default_loss: float | None) -> None:
    decisions = decided(700)
    learned = []
    for write in (decision_payload, json_payload):
        log = log_of(decisions, write)
        learner = build_learner(CONFIG)
        metrics = ServiceMetrics().for_model("m")
        done = 0
        while done < len(log):
            done += apply_slice(
                learner, log[done:], uid=UID, default_loss=default_loss, metrics=metrics
            )[0]
        learned.append((learner.version, state_of(learner)))
    (v1, s1), (v2, s2) = learned
    assert v1 == v2 > 10
    assert s1.keys() == s2.keys()
    for name in s1:
        np.testing.assert_array_equal(s1[name], s2[name], err_msg=name)


def test_a_log_mixing_both_forms_decodes_as_each_entry_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decisions = decided(120)
    log = [
        LogEntry(i + 1, d.event_id, (decision_payload if i % 3 else json_payload)(UID, d),
                 feedback_json(Feedback(loss=0.25)), 1.0)
        for i, d in enumerate(decisions)
    ]  # fmt: skip
    bad = BINARY_PREFIX + "zz"
    log[7] = LogEntry(8, "bad", bad, '{"loss": 1}', 1.0)
    log[8] = LogEntry(9, "other", decision_payload("another", decisions[8]), '{"loss": 1}', 1.0)
    with caplog.at_level(logging.WARNING, logger="banditree.service"):
        one = [decode_entry(e, uid=UID, default_loss=None) for e in log]
        singly = [r.getMessage() for r in caplog.records]
        caplog.clear()
        batch = decode_entries(log, uid=UID, default_loss=None)
        batched = [r.getMessage() for r in caplog.records]
    assert batch == one
    assert batched == singly and len(singly) == 1 and "not hexadecimal" in singly[0]
    assert one[7] is None and one[8] is None
    assert [p[0] for p in one if p is not None] == decisions[:7] + decisions[9:]


def test_the_exported_row_of_a_binary_entry_is_that_of_its_json_entry() -> None:
    (d,) = decided(1)
    rows = [
        entry_row(LogEntry(1, d.event_id, write(UID, d), '{"loss": 0.5}', 2.0), UID, None)
        for write in (decision_payload, json_payload)
    ]
    assert rows[0] == rows[1] and rows[0] is not None


# -- hostile records ---------------------------------------------------------------

_HEAD = struct.Struct("<BBHHHIIqqqqqd")


def forged(
    *,
    version: int = 1,
    flags: int = 0,
    uid: bytes = UID.encode(),
    event: bytes = b"ev",
    extras: bytes = b"",
    context: tuple[float, ...] = (1.0, 2.0),
    n: int | None = None,
    reserved: int = 0,
    propensity: float = 0.5,
    action: int = 1,
) -> str:
    head = _HEAD.pack(
        version, flags, len(uid), len(event), len(extras), len(context) if n is None else n,
        reserved, 1, action, 0, 0, 0, propensity,
    )  # fmt: skip
    body = struct.pack(f"<{len(context)}d", *context)
    return BINARY_PREFIX + (head + body + uid + event + extras).hex()


HOSTILE = {
    "not hex": BINARY_PREFIX + "0g" * 40,
    "odd digits": forged()[:-1],
    "empty": BINARY_PREFIX,
    "short of a header": BINARY_PREFIX + "01" * 20,
    "version 2": forged(version=2),
    "unknown flag": forged(flags=4),
    "reserved set": forged(reserved=1),
    "more floats claimed": forged(n=3),
    "fewer floats claimed": forged(n=1),
    "huge length claimed": forged(n=2**31),
    "trailing byte": forged() + "00",
    "NaN in context": forged(context=(1.0, math.nan)),
    "inf in context": forged(context=(math.inf, 1.0)),
    "NaN propensity": forged(propensity=math.nan),
    "inf propensity": forged(propensity=-math.inf),
    "event id not UTF-8": forged(event=b"\xff\xfe"),
    "extras not JSON": forged(extras=b"{nope"),
    "extras a list": forged(extras=b"[1]"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_record_is_refused_by_name(name: str) -> None:
    payload = HOSTILE[name]
    with pytest.raises(ValueError, match="stored decision"):
        read_decision(payload, UID)
    good = decision_payload(UID, CLASSIFICATION[0])
    out = read_binaries([good, payload, good], UID)
    assert out[0] == out[2] == CLASSIFICATION[0]
    assert isinstance(out[1], ValueError) and "stored decision" in str(out[1])


def test_every_truncation_of_a_record_is_refused() -> None:
    payload = decision_payload(UID, CLASSIFICATION[0])
    for cut in range(len(BINARY_PREFIX), len(payload)):
        with pytest.raises(ValueError, match="stored decision"):
            read_decision(payload[:cut], UID)
    out = read_binaries([payload[:cut] for cut in range(3, len(payload), 7)], UID)
    assert all(isinstance(item, ValueError) for item in out)


def test_hostile_entries_never_reach_the_model(caplog: pytest.LogCaptureFixture) -> None:
    decisions = decided(64)
    log = log_of(decisions, decision_payload)
    for i, payload in enumerate(HOSTILE.values()):
        log.insert(3 * i + 1, LogEntry(1000 + i, "h", payload, '{"loss": 1.0}', 1.0))
    learner = build_learner(CONFIG)
    with caplog.at_level(logging.WARNING, logger="banditree.service"):
        pairs = decode_entries(log, uid=UID, default_loss=0.5)
    assert sum(p is None for p in pairs) == len(HOSTILE)
    assert len(caplog.records) == len(HOSTILE)
    learner.learn_batch([p[0] for p in pairs if p], [p[1] for p in pairs if p])
    assert all(np.isfinite(v).all() for v in state_of(learner).values())


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), keep=st.integers(0, 200))
def test_random_bytes_are_read_or_refused_never_crash(data: bytes, keep: int) -> None:
    real = bytes.fromhex(decision_payload(UID, CLASSIFICATION[0])[len(BINARY_PREFIX) :])
    for raw in (data, real[:keep] + data):  # noise, and a real header with noise after it
        payload = BINARY_PREFIX + raw.hex()
        try:
            decision = read_decision(payload, UID)
        except ValueError:
            decision = None
        [batch] = read_binaries([payload], UID)
        if decision is None:
            assert batch is None or isinstance(batch, ValueError)
        else:
            assert batch == decision
            assert all(map(math.isfinite, decision.context))
            assert math.isfinite(decision.propensity)


@settings(max_examples=200, deadline=None)
@given(
    context=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=40),
    action=st.integers(0, 2**63 - 1),
    propensity=st.floats(min_value=1e-300, max_value=1.0),
    leaf=st.none() | st.integers(-(2**63), 2**63 - 1),
    event_id=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60),
)
def test_any_classification_decision_round_trips(
    context: list[float], action: int, propensity: float, leaf: int | None, event_id: str
) -> None:
    d = Decision.of_action(event_id, tuple(context), 7, action, propensity, 0, leaf, {"r": 0.5})
    payload = binary_payload(
        UID, event_id, context, 7, action, propensity, 0, leaf, 0, d.explored, d.extras
    )
    assert payload is not None
    assert read_decision(payload, UID) == d == read_binaries([payload], UID)[0]


@pytest.mark.parametrize("kernel", [True, False])
def test_a_decided_batch_writes_its_own_float64_copy_as_the_rows(kernel: bool) -> None:
    """``act_columns`` hands its float64 contexts to the stored form: the same texts as
    the rows written one by one, and as the columns without that array."""
    import dataclasses

    learner = build_learner(CONFIG)
    if not kernel:
        use_reference(learner)  # type: ignore[arg-type]
    rng = np.random.default_rng(2)
    contexts = (rng.normal(size=(33, 6)) * 1e5).tolist()
    contexts[3] = [1, 2, 3, 4, 5, 6]  # integers: written as the floats they are
    columns = learner.act_columns(contexts)
    assert columns.context_array is not None
    payloads = column_payloads(UID, columns)
    assert payloads == [decision_payload(UID, d) for d in columns.rows()]
    assert payloads == column_payloads(UID, dataclasses.replace(columns, context_array=None))
    assert [d.context for d in read_binaries(payloads, UID)] == [  # type: ignore[union-attr]
        tuple(map(float, c)) for c in contexts
    ]


def each(payloads: list[str]) -> list[Decision | ValueError | None]:
    """:func:`read_decision` of each payload, its error in place of a raise."""
    out: list[Decision | ValueError | None] = []
    for payload in payloads:
        try:
            out.append(read_decision(payload, UID))
        except ValueError as err:
            out.append(err)
    return out


def same(a: list[Decision | ValueError | None], b: list[Decision | ValueError | None]) -> bool:
    return [str(v) if isinstance(v, ValueError) else v for v in a] == [
        str(v) if isinstance(v, ValueError) else v for v in b
    ]


SAME_SIZE = {  # records of the size of forged()'s, each wrong in one way
    "NaN in context": forged(context=(1.0, math.nan)),
    "inf propensity": forged(propensity=math.inf),
    "version 2": forged(version=2),
    "unknown flag": forged(flags=8),
    "reserved set": forged(reserved=7),
    "another model": forged(uid=UID[::-1].encode()),
    "event id not UTF-8": forged(event=b"\xff\xfe"),
    "extras in place of an event id": forged(event=b"", extras=b"{}"),
}


@pytest.mark.parametrize("name", list(SAME_SIZE))
def test_a_chunk_of_one_size_with_one_odd_record_is_read_record_by_record(name: str) -> None:
    good = [forged(event=f"e{i}".encode(), flags=i % 4) for i in range(10)]
    assert len({len(p) for p in [*good, SAME_SIZE[name]]}) == 1
    assert same(read_binaries(good, UID), each(good))
    assert all(isinstance(d, Decision) for d in read_binaries(good, UID))
    chunk = [*good[:4], SAME_SIZE[name], *good[4:]]
    assert same(read_binaries(chunk, UID), each(chunk))
    odd = read_binaries(chunk, UID)[4]
    if name == "another model":
        assert odd is None
    elif name.startswith("extras"):  # well formed, laid out otherwise: read alone
        assert isinstance(odd, Decision) and (odd.event_id, odd.extras) == ("", {})
    else:
        assert isinstance(odd, ValueError)


def test_a_chunk_of_one_size_reads_leaves_flags_and_non_ascii_ids_as_one_by_one() -> None:
    rng = np.random.default_rng(8)
    decisions = [
        Decision.of_action(
            f"é{i:03d}" if i % 2 else f"ab{i:03d}",
            tuple(rng.normal(size=5)),
            9,
            int(i % 4),
            float(rng.random()) + 1e-3,
            1,
            None if i % 3 == 0 else -i,
            {},
        )
        for i in range(30)
    ]
    payloads = [decision_payload(UID, d) for d in decisions]
    assert len({len(p) for p in payloads}) == 1  # é is 2 bytes: ab + 3 digits is 5 too
    assert read_binaries(payloads, UID) == decisions == each(payloads)
    ascii_only = payloads[::2]
    assert read_binaries(ascii_only, UID) == decisions[::2]
