"""A batch predict's body read and its answer and stored records written, by the kernel.

The service's batch predict spent most of its time in Python around a few
microseconds of decisions: parsing the body into lists of floats, checking them,
converting them to an array, writing a dict per row for the answer and a record per row
for the store.  :func:`parse_rows` reads a body that is exactly
``{"contexts": [[numbers], ...]}`` straight into a float64 array,
:func:`parse_row` the one context of ``{"context": [numbers]}`` into a list of floats,
and :func:`write_rows` writes the rows' public answers (the JSON objects of
:func:`banditree.core.codec.columns_public`) and their stored records (those of
:func:`banditree.core.codec.column_payloads`) in one pass over the kernel's columns.

Each gives None where it does not apply (another body, columns not made by the kernel,
an event id that would need escaping, ``BANDITREE_KERNEL=reference``): the caller then
runs the reference, orjson with the hand checks and the codec, whose results these
equal (``tests/kernel/test_rows.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.columns import ArrayRows, DecisionColumns, FloatRows
from banditree.kernel import ACTIVE, native

__all__ = ["parse_row", "parse_rows", "stack_rows", "write_rows"]


def parse_rows(body: bytes, max_rows: int, max_columns: int) -> ArrayRows | None:
    """The contexts of a predict body that is exactly ``{"contexts": [[numbers], ...]}``
    (JSON whitespace anywhere), with at least one row, every row of the same length in
    ``[1, max_columns]``, at most ``max_rows`` rows and every number finite: the lists
    of floats orjson reads (an integer becomes its float, ``-0`` is ``0.0``) with their
    float64 array.  None for any other body, and for an integer of more than 15 digits
    or a number written in more than 400 characters (the reference reads those)."""
    module = native() if ACTIVE == "native" else None
    if module is None:
        return None
    found = module.parse_rows(body, max_rows, max_columns)
    if found is None:
        return None
    floats, rows, columns = found
    array = np.frombuffer(floats, dtype=np.float64).reshape(rows, columns)
    return ArrayRows(array.tolist(), array)


def parse_row(body: bytes, max_columns: int) -> list[float] | None:
    """The context of a predict body that is exactly ``{"context": [numbers]}`` (JSON
    whitespace anywhere) of 1 to ``max_columns`` numbers, every one finite: the list of
    floats orjson and the front's hand checks make of it (an integer becomes its float,
    ``-0`` is ``0.0``).  None for any other body, under the same rules as :func:`parse_rows`."""
    module = native() if ACTIVE == "native" else None
    if module is None:
        return None
    return module.parse_row(body, max_columns)


def stack_rows(rows: list[Any], columns: int) -> ArrayRows | None:
    """``rows`` with their float64 ``(len(rows), columns)`` array, made for them alone,
    when ``rows`` is a non-empty list of lists of exactly ``columns`` floats, every one
    finite (the one-context bodies of a tick, as :func:`parse_row` reads them): what
    :func:`parse_rows` gives for the same numbers, without numpy's conversion of nested
    lists.  None for anything else (the caller converts as before, and its checks name
    a bad row)."""
    module = native() if ACTIVE == "native" else None
    if module is None or columns < 1:
        return None
    floats = module.stack_rows(rows, columns)
    if floats is None:
        return None
    array = np.frombuffer(floats, dtype=np.float64).reshape(-1, columns)
    return ArrayRows(rows, array)


def write_rows(uid: str, columns: DecisionColumns) -> tuple[list[bytes], list[str]] | None:
    """``(answers, payloads)`` of a batch the kernel decided (``columns.kernel_arrays``
    set, with its context array, of number lists): each row's public answer as JSON (the object of
    :func:`~banditree.core.codec.columns_public`) and its stored form under ``uid``;
    None for other columns, or when an event id holds a character JSON would escape."""
    module = native() if ACTIVE == "native" else None
    arrays, x = columns.kernel_arrays, columns.context_array
    if module is None or arrays is None or x is None or columns.extras:
        return None
    contexts = columns.contexts
    if not isinstance(contexts, FloatRows) and any(type(c) is not list for c in contexts):
        return None  # named features: their record keeps the object (JSON)
    action, propensity, greedy, leaf = arrays
    written: tuple[list[bytes], list[str]] | None = module.write_rows(
        uid.encode(), columns.event_ids, columns.model_version, x, action, propensity, greedy,
        leaf,
    )  # fmt: skip
    return written
