"""``decode_stored``: a log chunk's stored texts decoded by one kernel call, against the
Python decoding of each entry (``banditree.core.codec.read_decision`` and the feedback's
JSON, as the service's ``decode_entry`` reads them).

Chunks are drawn by hypothesis from the forms a log holds (binary records of this model
and of others, JSON records, plain losses, expiries) and from hostile ones (truncated,
corrupted and odd-length hexadecimal, headers whose lengths lie, NaN and infinities in a
context or a propensity, extras, non-ASCII event ids, feedbacks of every other form,
numbers JSON does not write).  An entry the kernel learns (status 0) is one the Python
decoding reads into the same pair, bit for bit; one it drops (1) is one the Python
decoding drops; the rest (2) it leaves to the Python decoding, and the common forms are
never among them.  ``make sanitize`` runs this file under AddressSanitizer and
UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree import kernel
from banditree.core.codec import binary_payload, decision_payload, feedback_json, read_decision
from banditree.core.records import Decision, Feedback
from tests.kernel.pairs import pair  # noqa: F401 - skips the module without the kernel

module = kernel.native()
UID, D = "model-1", 4
RAISED = (TypeError, ValueError, OverflowError)


def python_pair(
    decision: str, feedback: str | None, default_loss: float | None
) -> tuple[Decision, Feedback] | None:
    """The service's ``decode_entry`` (``service.domain.runtime.replay``), whose errors
    (logged there) are None here too."""
    try:
        d = read_decision(decision, UID)
        if d is None:
            return None
        if feedback is None:
            if default_loss is None:
                return None
            return d, Feedback(loss=default_loss)  # (no probes: a classification record)
        return d, Feedback.from_dict(orjson.loads(feedback))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def bits(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def decode(
    decisions: list[Any], feedbacks: list[Any], default_loss: float | None, d: int = D
) -> tuple[np.ndarray, ...]:
    return kernel.decode_stored(module, decisions, feedbacks, UID.encode(), default_loss, d)


def check_chunk(decisions: list[str], feedbacks: list[str | None], default: float | None) -> None:
    rows, actions, propensity, loss, status = decode(decisions, feedbacks, default)
    assert set(status.tolist()) <= {0, 1, 2}
    for i, (text, fb) in enumerate(zip(decisions, feedbacks, strict=True)):
        expected = python_pair(text, fb, default)
        if status[i] == kernel.STORED_NONE:
            assert expected is None, (i, text, fb)
        elif status[i] == kernel.STORED_LEARN:
            assert expected is not None, (i, text, fb)
            d, f = expected
            assert f.losses is None and f.loss is not None and f.label is None
            assert [bits(v) for v in rows[i]] == [bits(float(v)) for v in d.context]
            assert actions[i] == d.action and bits(propensity[i]) == bits(d.propensity)
            assert bits(loss[i]) == bits(float(f.loss)), (fb, loss[i], f.loss)


finite = st.floats(allow_nan=False, allow_infinity=False)
numbers = st.one_of(
    finite, st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -0.0, 5e-324, 0.0])
)


@st.composite
def record(draw: st.DrawFn) -> tuple[str, bool]:
    """A stored decision and whether it is one the kernel must read (a plain binary
    record of this model)."""
    kind = draw(st.integers(0, 9))
    n = D if kind else draw(st.sampled_from([0, 1, D + 1]))
    context = draw(st.lists(numbers if draw(st.booleans()) else finite, min_size=n, max_size=n))
    uid = UID if draw(st.integers(0, 5)) else draw(st.sampled_from(["other", "", "model-2"]))
    event = draw(st.sampled_from(["e1", "ev-" + "x" * 40, "é", "", "a\x1eb"]))
    action = draw(st.integers(-2, 12) | st.sampled_from([2**62, -(2**62)]))
    propensity = draw(st.floats(0.0, 1.0) | numbers)
    extras = draw(st.sampled_from([None, None, None, {"a": 1.5}]))
    leaf = draw(st.sampled_from([None, 3]))
    payload = binary_payload(
        uid, event, context, 7, action, propensity, draw(st.integers(0, 9)), leaf, 0,
        draw(st.booleans()), extras,
    )  # fmt: skip
    assert payload is not None
    plain = (
        uid == UID and extras is None and n == D and event.isascii()
        and all(map(math.isfinite, context)) and math.isfinite(propensity)
    )  # fmt: skip
    hexes = payload[3:]
    damage = draw(st.integers(0, 11))
    if damage == 1:  # truncated: any length, odd ones included
        return payload[: draw(st.integers(0, len(payload)))], False
    if damage == 2:  # one digit replaced by any character
        at = draw(st.integers(0, len(hexes) - 1))
        char = draw(st.characters(codec="utf-8"))
        return "b1:" + hexes[:at] + char + hexes[at + 1 :], False
    if damage == 3:  # one byte of the record replaced: a header that lies
        raw = bytearray(bytes.fromhex(hexes))
        raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        return "b1:" + raw.hex(), False
    if damage == 4:  # upper-case digits (a2b_hex reads them) or bytes added
        return ("b1:" + hexes.upper(), plain) if draw(st.booleans()) else (payload + "00", False)
    if damage == 5:  # a JSON record, or any text
        return draw(
            st.sampled_from([
                decision_payload(UID, Decision(event_id="j", context=(1.0,) * D, model_version=0,
                                               action=1, propensity=0.5, greedy_action=1)),
                decision_payload(UID, Decision(event_id="r", context=(1.0,) * D, model_version=0,
                                               value=0.5, greedy_value=0.5)),
                "{}", "", "b1", "b1:", "null", "[1]",
            ])
            | st.text(max_size=80)
        ), False  # fmt: skip
    return payload, plain


feedback_forms = st.one_of(
    st.builds(lambda v: feedback_json(Feedback(loss=v)), finite),
    st.sampled_from(
        [
            '{"loss":1}',
            '{"loss":-0}',
            '{"loss":-0.0}',
            '{"loss":0.5}',
            '{"loss":1e400}',
            '{"loss":1E2}',
            '{"loss":01}',
            '{"loss":1.}',
            '{"loss":.5}',
            '{"loss":+1}',
            '{"loss":NaN}',
            '{"loss":Infinity}',
            '{"loss":"1"}',
            '{"loss":true}',
            '{"loss":null}',
            '{"loss": 1.0}',
            '{"loss":1.0,"label":null}',
            '{"loss":123456789012345678}',
            '{"loss":0.1000000000000000055511151231257827}',
            '{"loss":1.0}x',
            '{"loss":1.0',
            '{"losses":[0.5,0.25]}',
            '{"label":1.0}',
            "{}",
            "",
            "x",
            "[]",
            '{"loss":1.0,"losses":null,"label":null}',
            '{"loss":2.5e-3,"losses":null,"label":null}',
        ]
    ),
    st.builds(lambda v: '{"loss":' + repr(v) + "}", st.floats()),
    st.text(max_size=40),
    st.none(),
)


def written(feedback: str | None) -> bool:
    """Whether ``feedback`` is what ``feedback_json`` writes for a loss (None: an expiry)."""
    if feedback is None:
        return True
    try:
        loss = orjson.loads(feedback)["loss"]
        return type(loss) is float and feedback == feedback_json(Feedback(loss=loss))
    except (ValueError, KeyError, TypeError):
        return False


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(record(), feedback_forms), max_size=24),
    st.sampled_from([None, 0.25, -0.0, 1e300]),
)
def test_decode_stored_is_the_python_decoding(
    entries: list[tuple[tuple[str, bool], str | None]], default: float | None
) -> None:
    decisions = [text for (text, _), _ in entries]
    feedbacks = [fb for _, fb in entries]
    check_chunk(decisions, feedbacks, default)
    _, _, _, _, status = decode(decisions, feedbacks, default)
    for i, ((_, plain), fb) in enumerate(entries):
        if plain and written(fb):  # the form predict and feedback write: always the kernel's
            expected = kernel.STORED_NONE if fb is None and default is None else kernel.STORED_LEARN
            assert status[i] == expected, (decisions[i], fb)


def test_a_model_log_is_read_whole_by_the_kernel() -> None:
    rng = np.random.default_rng(3)
    contexts = rng.normal(size=(50, D))
    decisions = [
        binary_payload(UID, f"ev{i}", c.tolist(), 3, i % 5, 0.2, 1, i % 4, 0, bool(i % 2), None)
        for i, c in enumerate(contexts)
    ]
    feedbacks = [feedback_json(Feedback(loss=float(i % 3) / 2)) for i in range(50)]
    feedbacks[7] = None  # an expiry
    rows, actions, propensity, loss, status = decode(decisions, feedbacks, 0.75)  # type: ignore[arg-type]
    assert (status == kernel.STORED_LEARN).all()
    np.testing.assert_array_equal(rows, contexts)
    assert actions.tolist() == [i % 5 for i in range(50)]
    assert (propensity == 0.2).all() and loss[7] == 0.75 and loss[2] == 1.0
    _, _, _, _, status = decode(decisions, feedbacks, None)  # type: ignore[arg-type]
    assert status[7] == kernel.STORED_NONE and (np.delete(status, 7) == 0).all()


def test_an_empty_chunk_and_a_wrong_width() -> None:
    assert [len(a) for a in decode([], [], None)] == [0] * 5
    payload = binary_payload(UID, "e", [1.0] * D, 0, 1, 0.5, 1, None, 0, False, None)
    *_, status = decode([payload], ['{"loss":1.0}'], None, d=D + 1)
    assert status.tolist() == [kernel.STORED_PYTHON]  # the learner names the wrong length


def _args(n: int) -> list[Any]:
    return [
        ["b1:00"] * n, [None] * n, UID.encode(), None, np.zeros((n, D)),
        np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64),
    ]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_hostile_arguments_raise_and_never_crash(data: st.DataObject) -> None:
    n = data.draw(st.integers(0, 4))
    args = _args(n)
    wrong = data.draw(st.lists(st.integers(0, len(args) - 1), max_size=2))
    for i in wrong:
        args[i] = data.draw(
            st.sampled_from([
                None, 7, "text", b"bytes", 1.5, [1.0] * n, ("b1:",) * n, ["b1:"] * (n + 1),
                np.zeros((n, D), dtype=np.float32), np.zeros((n + 1, D)), np.zeros(n),
                np.zeros((n, D)).T, np.zeros(n, dtype=np.int32), np.zeros((n, 2, 2)),
                memoryview(b"\x00" * 8 * n), np.zeros(n + 1, dtype=np.int64),
            ])
        )  # fmt: skip
    readonly = data.draw(st.booleans()) and not wrong
    if readonly:
        args[4] = args[4].copy()
        args[4].setflags(write=False)
    try:
        module.decode_stored(*args)
    except RAISED:
        return
    assert not readonly


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 10, 127, 128, 129, 130, 131])
def test_every_truncation_of_a_record(cut: int) -> None:
    payload = binary_payload(UID, "event", [0.5] * D, 1, 2, 0.5, 2, 1, 0, True, None)
    assert payload is not None
    text = payload[: 3 + cut] if cut < len(payload) - 3 else payload
    check_chunk([text, payload], ['{"loss":1.0}', None], 0.5)
