"""Read a log file (NDJSON, Parquet, CSV, or the simulator's ``decisions.csv``) into a table."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from banditree.logs.record import validate_row
from banditree.logs.table import LogTable, table_from_columns
from banditree.logs.writers import LogFormat, _pyarrow, format_from_path, gc_paused


def _read_ndjson(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    rows = []
    with opener(path, "rb") as fh, gc_paused():
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not JSON: {err}") from None
            validate_row(row, f"{path}:{number}")
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: the log has no rows")
    return rows_to_columns(rows, str(path))


def rows_to_columns(rows: list[dict[str, Any]], where: str) -> dict[str, Any]:
    """Validated wire rows (:func:`banditree.logs.validate_row`) as named columns; a
    ``ValueError`` starting with ``where`` when their contexts do not make one table."""
    named = isinstance(rows[0]["context"], dict)
    width = len(rows[0]["context"])
    for number, row in enumerate(rows, start=1):
        if isinstance(row["context"], dict) != named:
            raise ValueError(
                f"{where}: row {number} mixes a context of "
                f"{'numbers' if named else 'named features'} into a log of "
                f"{'named features' if named else 'numbers'}"
            )
        if not named and len(row["context"]) != width:
            raise ValueError(
                f"{where}: row {number} has {len(row['context'])} context values, not {width}"
            )
    keys = {k for row in rows for k in row}
    return {k: [row.get(k) for row in rows] for k in keys}


def table_from_rows(name: str, rows: list[dict[str, Any]]) -> LogTable:
    """Wire rows (the service's log export, each already validated) as a checked
    :class:`LogTable` in offset order."""
    if not rows:
        raise ValueError(f"{name}: the log has no rows")
    table = table_from_columns(name, rows_to_columns(rows, name), len(rows))
    return _in_offset_order(table).check()


def _in_offset_order(table: LogTable) -> LogTable:
    order = np.argsort(table.offset, kind="stable")
    return table if np.all(order == np.arange(table.n_rows)) else table.rows(order)


def _read_arrow(path: Path, fmt: LogFormat) -> dict[str, Any]:
    _pyarrow()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(str(path))
    else:
        import pyarrow.csv as pacsv

        table = pacsv.read_csv(str(path))
    columns: dict[str, Any] = {}
    for name in table.column_names:
        column = table.column(name)
        if name in ("event_id", "source"):
            columns[name] = column.cast("string").to_pylist()
        else:
            columns[name] = column.to_numpy(zero_copy_only=False)
    return columns


def read_log(path: Path | str, fmt: LogFormat | None = None) -> LogTable:
    """The log at ``path`` as a validated :class:`LogTable`, in offset order.

    A file with a ``seed`` column (the simulator's ``decisions.csv``) holds one log per
    seed: the first seed's rows are read, with ``round`` as the offset.  A ``reward``
    column stands for ``loss = 1 - reward``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such log file")
    fmt = fmt or format_from_path(path)
    if fmt == "dsjson":
        raise ValueError(
            f"{path}: a DSJson log holds candidate sets (a ranking model's log): read it "
            "with banditree.logs.dsjson.read_dsjson"
        )
    columns = _read_ndjson(path) if fmt == "ndjson" else _read_arrow(path, fmt)
    n = len(next(iter(columns.values()))) if columns else 0
    if n == 0:
        raise ValueError(f"{path}: the log has no rows")
    if "seed" in columns:
        seeds = np.asarray(columns["seed"])
        keep = np.flatnonzero(seeds == seeds[0])
        columns = {
            k: (np.asarray(v, dtype=object) if isinstance(v, list) else np.asarray(v))[keep]
            for k, v in columns.items()
        }
        n = len(keep)
    name = path.name.split(".")[0]
    return _in_offset_order(table_from_columns(name, columns, n)).check()
