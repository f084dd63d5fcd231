"""A batch predict's body read and its answer and records written by the kernel
(``banditree.kernel.rows``) equal the reference: orjson with the fast front's hand checks,
and the codec's ``columns_public`` and ``column_payloads``."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree import kernel
from banditree.core.codec import column_payloads, columns_public, read_decision
from banditree.core.columns import ArrayRows, FloatRows
from banditree.kernel.rows import parse_row, parse_rows, stack_rows, write_rows
from banditree.learners import InvalidInput, build_learner
from banditree.learners.validation import as_contexts

module = kernel.native()
pytestmark = pytest.mark.skipif(module is None, reason="BANDITREE_KERNEL=reference")


def reference_rows(body: bytes) -> list[list[float]] | None:
    """What the front's reference reads of a body that is only number lists (None: another)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or list(data) != ["contexts"] or type(data["contexts"]) is not list:
        return None
    rows = data["contexts"]
    if not rows or any(type(r) is not list or not r or len(r) != len(rows[0]) for r in rows):
        return None
    out = []
    for row in rows:
        if any(type(v) not in (int, float) for v in row):
            return None
        floats = [float(v) for v in row]
        if not all(map(math.isfinite, floats)):
            return None
        out.append(floats)
    return out


def same_floats(a: list[list[float]], b: list[list[float]]) -> bool:
    """Equal as bits (the sign of a zero included)."""
    return np.array_equal(np.array(a).view(np.int64), np.array(b).view(np.int64))


def test_a_batch_reads_as_orjson_reads_it() -> None:
    rng = np.random.default_rng(3)
    rows = [[round(float(v), 6) for v in r] for r in rng.normal(size=(40, 7))]
    rows[0][:4] = [0, -0, 12345678901234, -1e-320]
    body = json.dumps({"contexts": rows}).encode()
    found = parse_rows(body, 100, 100)
    assert isinstance(found, ArrayRows) and isinstance(found, FloatRows)
    assert same_floats(found, orjson.loads(body)["contexts"])
    assert found.array.shape == (40, 7) and found == found.array.tolist()
    assert as_contexts(found, 7) is found.array  # decided on as read
    with pytest.raises(InvalidInput, match="exactly 8 numbers"):
        as_contexts(found, 8)  # another width: the lists' own refusal


def test_an_ints_zero_is_positive_and_a_floats_keeps_its_sign() -> None:
    found = parse_rows(b'{"contexts": [[-0, -0.0, 0e0, -0E+0]]}', 10, 10)
    assert found is not None
    assert [math.copysign(1.0, v) for v in found[0]] == [1.0, -1.0, 1.0, -1.0]


@pytest.mark.parametrize(
    "body",
    [
        b'{"contexts": []}',  # an empty batch
        b'{"contexts": [[]]}',  # an empty context
        b'{"contexts": [[1, 2], [3]]}',  # ragged
        b'{"contexts": [[1, 2]], "event_ids": ["a"]}',  # another key
        b'{"contexts": [[1, 2]], "contexts": [[1, 2]]}',  # a repeated key
        b'{"context": [1, 2]}',  # one context
        b'{"contexts": [[1, NaN]]}',
        b'{"contexts": [[1, Infinity]]}',
        b'{"contexts": [[1e400]]}',  # not finite once read
        b'{"contexts": [[1234567890123456]]}',  # an integer orjson keeps as one
        b'{"contexts": [[01]]}',
        b'{"contexts": [[1.]]}',
        b'{"contexts": [[.5]]}',
        b'{"contexts": [[+1]]}',
        b'{"contexts": [[1e]]}',
        b'{"contexts": [["1"]]}',
        b'{"contexts": [[true]]}',
        b'{"contexts": [[null]]}',
        b'{"contexts": [[1, 2],]}',
        b'{"contexts": [[1, 2,]]}',
        b'{"contexts": [[1 2]]}',
        b'{"contexts": [[1]]} x',
        b'{"contexts": [[1]]',
        b'{"contexts": [[1]',
        b'{"contexts" [[1]]}',
        b'{"con\\u0074exts": [[1]]}',  # an escape the reference would read
        b"",
        b"[[1]]",
        b'{"contexts": [[' + b"1" * 500 + b".5]]}",  # longer than it reads
    ],
)
def test_every_other_body_is_declined(body: bytes) -> None:
    assert parse_rows(body, 10, 10) is None


def test_the_bounds_decline() -> None:
    assert parse_rows(b'{"contexts": [[1, 2, 3]]}', 10, 3) is not None
    assert parse_rows(b'{"contexts": [[1, 2, 3]]}', 10, 2) is None
    assert parse_rows(b'{"contexts": [[1], [2]]}', 2, 10) is not None
    assert parse_rows(b'{"contexts": [[1], [2], [3]]}', 2, 10) is None
    with pytest.raises(ValueError, match="max_rows"):
        module.parse_rows(b"{}", 0, 1)


def reference_row(body: bytes) -> list[float] | None:
    """What the front's reference reads of a body that is one number list (None: another)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or list(data) != ["context"] or type(data["context"]) is not list:
        return None
    rows = reference_rows(orjson.dumps({"contexts": [data["context"]]}))
    return None if rows is None else rows[0]


def test_one_context_reads_as_orjson_reads_it() -> None:
    row = [0, -0, 12345678901234, -1e-320, 0.1, -2.5e-7, 1e300]
    body = json.dumps({"context": row}).encode()
    found = parse_row(body, 100)
    assert type(found) is list and all(type(v) is float for v in found)
    assert same_floats([found], [[float(v) for v in orjson.loads(body)["context"]]])
    assert [math.copysign(1.0, v) for v in parse_row(b'{"context":[-0,-0.0]}', 2) or []] == [
        1.0,
        -1.0,
    ]


@pytest.mark.parametrize(
    "body",
    [
        b'{"context": []}',  # an empty context
        b'{"context": [[1, 2]]}',  # a batch under the single key
        b'{"contexts": [[1, 2]]}',  # a batch
        b'{"context": [1, 2], "event_id": "a"}',  # another key
        b'{"context": [1, 2], "context": [1, 2]}',  # a repeated key
        b'{"context": {"a": 1}}',  # named features
        b'{"context": [1, NaN]}',
        b'{"context": [1e400]}',  # not finite once read
        b'{"context": [1234567890123456]}',  # an integer orjson keeps as one
        b'{"context": [01]}',
        b'{"context": [1.]}',
        b'{"context": [true]}',
        b'{"context": [null]}',
        b'{"context": ["1"]}',
        b'{"context": [1, 2,]}',
        b'{"context": [1 2]}',
        b'{"context": [1]} x',
        b'{"context": [1]',
        b'{"context": [1',
        b'{"context" [1]}',
        b'{"con\\u0074ext": [1]}',
        b"",
        b"[1]",
        b'{"context": [' + b"1" * 500 + b".5]}",
    ],
)
def test_every_other_single_body_is_declined(body: bytes) -> None:
    assert parse_row(body, 10) is None


def test_the_single_bound_declines() -> None:
    assert parse_row(b'{"context": [1, 2, 3]}', 3) == [1.0, 2.0, 3.0]
    assert parse_row(b'{"context": [1, 2, 3]}', 2) is None
    with pytest.raises(ValueError, match="max_columns"):
        module.parse_row(b"{}", 0)


#: number texts JSON allows, of every shape the reader takes two ways (the fast path of
#: at most 15 digits and a power of ten up to 22, CPython's conversion past them)
_numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda v: f"{v:.9g}"),
    st.integers(-(10**16), 10**16).map(str),
    st.builds(
        lambda m, zeros, f, e, mark: f"{m}.{'0' * zeros}{f}{mark}{e}".replace("e+-", "e-"),
        st.integers(-(10**9), 10**9),
        st.integers(0, 12),
        st.integers(0, 10**20),
        st.integers(-340, 340),
        st.sampled_from(["e", "E", "e+"]),
    ),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**17), 10**17), st.integers(-30, 30)),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_numbers, min_size=3, max_size=3), min_size=1, max_size=5),
    st.sampled_from(["", " ", "\n\t ", "\r\n"]),
)
def test_number_texts_read_as_orjson_reads_them(rows: list[list[str]], space: str) -> None:
    inner = ("," + space).join("[" + space + ",".join(r) + space + "]" for r in rows)
    body = f'{space}{{{space}"contexts"{space}:{space}[{inner}]{space}}}{space}'.encode()
    expected = reference_rows(body)
    found = parse_rows(body, 100, 100)
    if found is None:  # declined: a number the reference reads (or refuses) itself
        assert expected is None or any(
            len(t.lstrip("-").split(".")[0].split("e")[0].split("E")[0]) > 15
            and not any(c in t for c in ".eE")
            for r in rows
            for t in r
        )
        return
    assert expected is not None and same_floats(found, expected)


def _decided(config: dict[str, Any], n: int) -> tuple[Any, Any]:
    learner = build_learner({"kind": "dgt", "n_features": 5, "n_actions": 4, **config})
    x = np.random.default_rng(5).normal(size=(n, 5)) * 3
    ids = [f"{i:036x}" for i in range(n)]
    return learner, learner.act_columns(FloatRows(x.tolist()), ids)


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"explorer": "epsilon_greedy", "explorer_parameter": 0.5},
        {"explorer": "squarecb", "reward_link": "sigmoid"},
        {"kind": "dgt_forest", "n_trees": 3, "height": 2},
    ],
)
@pytest.mark.parametrize("n", [1, 5, 40])
def test_the_answer_and_records_are_the_codecs(config: dict[str, Any], n: int) -> None:
    _, columns = _decided(config, n)
    assert columns.kernel_arrays is not None
    written = write_rows("model-uid-\u00e9", columns)
    assert written is not None
    answers, payloads = written
    assert [orjson.loads(a) for a in answers] == columns_public(columns)
    assert payloads == column_payloads("model-uid-\u00e9", columns)
    assert [read_decision(p, "model-uid-\u00e9") for p in payloads] == columns.rows()


def test_columns_it_did_not_make_or_ids_to_escape_are_declined() -> None:
    learner, columns = _decided({}, 3)
    reference = learner.act_columns(np.zeros((3, 5)), ["a", "b", "c"])
    plain = type(reference)(**{**reference.__dict__, "kernel_arrays": None})
    assert write_rows("u", plain) is None
    quoted = type(columns)(**{**columns.__dict__, "event_ids": ['a"b', "c", "d"]})
    assert write_rows("u", quoted) is None
    with pytest.raises(ValueError, match="x must have length 1 on axis 0"):
        module.write_rows(b"u", ["a"], 0, np.zeros((2, 5)), *columns.kernel_arrays)
    with pytest.raises(ValueError, match="action must have length 3"):
        module.write_rows(b"u", ["a", "b", "c"], 0, columns.context_array, np.zeros(2, np.int64),
                          *columns.kernel_arrays[1:])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([b"", b'{"contexts": [[', b'{"contexts": [[1,']))
def test_hostile_bytes_are_read_as_the_reference_reads_them_or_declined(
    tail: bytes, head: bytes
) -> None:
    body = head + tail
    found = parse_rows(body, 4, 4)
    if found is not None:
        expected = reference_rows(body)
        assert expected is not None and same_floats(found, expected)
        assert len(found) <= 4 and len(found[0]) <= 4


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_numbers, min_size=1, max_size=6),
    st.sampled_from(["", " ", "\n\t ", "\r\n"]),
)
def test_one_context_number_texts_read_as_orjson_reads_them(row: list[str], space: str) -> None:
    body = f'{space}{{{space}"context"{space}:{space}[{space}{",".join(row)}{space}]{space}}}'
    expected = reference_row(body.encode())
    found = parse_row(body.encode(), 100)
    if found is None:  # declined: a number the reference reads (or refuses) itself
        assert expected is None or any(
            len(t.lstrip("-").split(".")[0].split("e")[0].split("E")[0]) > 15
            and not any(c in t for c in ".eE")
            for t in row
        )
        return
    assert expected is not None and same_floats([found], [expected])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=60))
def test_hostile_single_bodies_read_as_the_reference_or_decline(tail: bytes) -> None:
    body = b'{"context": [' + tail
    found = parse_row(body, 100)
    if found is not None:
        expected = reference_row(body)
        assert expected is not None and same_floats([found], [expected])


def _halfway(x: float, digits: int) -> str:
    """The decimal text of the point halfway between ``x`` and the next double, cut to
    ``digits`` characters (a tie, or just below one)."""
    from decimal import Decimal, localcontext

    above = math.nextafter(x, math.inf)
    with localcontext() as context:
        context.prec = 80
        return format((Decimal(x) + Decimal(above)) / 2, "f")[:digits]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        # 16 to 19 digits with a power of ten up to 19 either way: the 128-bit exact path
        st.builds(lambda m, e: f"{m}e{e}", st.integers(10**15, 10**19 - 1), st.integers(-38, 19)),
        st.floats(min_value=1e-19, max_value=1e19).map(repr),
        st.builds(
            _halfway, st.floats(min_value=0.5, max_value=1.0, exclude_max=True), st.integers(18, 22)
        ),
    ),
    st.booleans(),
)
def test_long_mantissas_round_as_orjson_reads_them(text: str, negative: bool) -> None:
    text = ("-" if negative else "") + text
    body = b'{"context": [' + text.encode() + b"]}"
    found = parse_row(body, 10)
    assert found is not None
    assert same_floats([found], [[float(orjson.loads(body)["context"][0])]])


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda width: st.lists(
            st.lists(
                st.floats(allow_nan=False, allow_infinity=False), min_size=width, max_size=width
            ),
            min_size=1,
            max_size=20,
        )
    )
)
def test_a_ticks_rows_stack_as_numpy_converts_them(rows: list[list[float]]) -> None:
    width = len(rows[0])
    found = stack_rows(rows, width)
    assert isinstance(found, ArrayRows) and found == rows
    assert found.array.dtype == np.float64 and found.array.shape == (len(rows), width)
    expected = np.array(rows, dtype=np.float64)
    assert found.array.tobytes() == expected.tobytes()  # bit for bit, -0.0 kept
    assert as_contexts(found, width) is found.array
    assert all(a is b for a, b in zip(found, rows, strict=True))  # the callers' own lists


@pytest.mark.parametrize(
    "rows",
    [
        [],  # no row
        [[1.0, 2.0], [3.0]],  # ragged
        [[1.0, 2.0, 3.0]],  # wider than the model
        [[1.0]],  # narrower
        [[1.0, 2]],  # an int: numpy would convert it, the kernel leaves it to numpy
        [[1.0, True]],
        [[1.0, math.nan]],
        [[1.0, -math.inf]],
        [(1.0, 2.0)],  # a tuple
        [{"a": 1.0, "b": 2.0}],  # named features
        [[1.0, "2"]],
        [[1.0, None]],
        [np.array([1.0, 2.0])],
    ],
)
def test_rows_the_kernel_does_not_stack_are_declined(rows: list[Any]) -> None:
    assert stack_rows(rows, 2) is None


def test_stack_rows_checks_its_arguments() -> None:
    with pytest.raises(TypeError):
        module.stack_rows(([1.0],), 1)  # not a list
    with pytest.raises(ValueError, match="columns"):
        module.stack_rows([[1.0]], 0)
    assert stack_rows([[1.0]], 0) is None
    big = [[0.5] * 1000 for _ in range(300)]
    found = stack_rows(big, 1000)
    assert found is not None and found.array.shape == (300, 1000)
