"""Writers of the interaction log: NDJSON, Parquet and CSV (Parquet and CSV through pyarrow).

Rows arrive in the wire form of :func:`banditree.logs.log_row` (as the export endpoint
streams them) and are written in batches, so memory stays bounded for any log length.
"""

from __future__ import annotations

import contextlib
import gc
import os
import secrets
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import numpy as np
import orjson

from banditree.logs.dsjson import dsjson_event
from banditree.logs.record import FLAT_COLUMNS

LogFormat = Literal["ndjson", "parquet", "csv", "dsjson"]
#: dsjson (VW's decision-service JSON, ranking models: :mod:`banditree.logs.dsjson`) is
#: chosen by name only: a ``.json`` file is NDJSON
LOG_FORMATS: tuple[str, ...] = ("ndjson", "parquet", "csv", "dsjson")
#: rows converted to one Arrow record batch at a time
BATCH_ROWS = 65_536

_INT_COLUMNS = ("offset", "model_version", "action", "greedy_action", "perturbation")
_STR_COLUMNS = ("event_id", "source")


def format_from_path(path: Path | str) -> LogFormat:
    """The log format a file name implies (``.ndjson``/``.jsonl``, ``.parquet``, ``.csv``)."""
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".ndjson", ".jsonl", ".json")):
        return "ndjson"
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    raise ValueError(
        f"{path}: cannot tell the log format from the name; "
        "use .ndjson, .parquet or .csv (or give the format)"
    )


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ModuleNotFoundError:
        raise RuntimeError(
            "Parquet and CSV logs need pyarrow: pip install 'banditree[sim]'"
        ) from None
    return pyarrow


_WIRE_KEYS = (
    "offset", "event_id", "time_seconds", "model_version", "action", "propensity",
    "greedy_action", "loss", "value", "greedy_value", "perturbation", "source",
    "probes", "losses", "context",
)  # fmt: skip
_read_wire = itemgetter(*_WIRE_KEYS)


def _wire_values(row: dict[str, Any]) -> tuple[Any, ...]:
    try:
        values: tuple[Any, ...] = _read_wire(row)
    except KeyError:  # a row with optional fields left out
        values = tuple(row.get(k) for k in _WIRE_KEYS)
    return values


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: building many short-lived tuples otherwise
    triggers full collections over every live row (the figure:
    ``docs/decisions/0008-library-hot-paths.md``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rows_to_arrow(rows: list[dict[str, Any]], n_features: int) -> Any:
    """One Arrow record batch of the flat form (:data:`FLAT_COLUMNS` then ``x0..``)."""
    with gc_paused():
        return _rows_to_arrow(rows, n_features)


def _rows_to_arrow(rows: list[dict[str, Any]], n_features: int) -> Any:
    pa = _pyarrow()
    by_key = dict(zip(_WIRE_KEYS, zip(*map(_wire_values, rows), strict=True), strict=True))
    n = len(rows)
    pairs = {"probes": ("probe_plus", "probe_minus"), "losses": ("loss_plus", "loss_minus")}
    for key, (plus, minus) in pairs.items():
        values = by_key.pop(key)
        if any(v is not None for v in values):
            by_key[plus] = tuple(None if v is None else v[0] for v in values)
            by_key[minus] = tuple(None if v is None else v[1] for v in values)
        else:
            by_key[plus] = by_key[minus] = (None,) * n
    if any(v is None for v in by_key["perturbation"]):
        by_key["perturbation"] = tuple(v or 0 for v in by_key["perturbation"])
    if any(v is None for v in by_key["source"]):
        by_key["source"] = tuple(v or "feedback" for v in by_key["source"])
    context = np.array(by_key.pop("context"), dtype=np.float64).reshape(n, n_features)
    columns: dict[str, Any] = {}
    for name in FLAT_COLUMNS:
        kind = pa.int64() if name in _INT_COLUMNS else pa.string() if name in _STR_COLUMNS else None
        columns[name] = pa.array(by_key[name], type=kind or pa.float64())
    for j in range(n_features):
        columns[f"x{j}"] = pa.array(context[:, j])
    return pa.record_batch(list(columns.values()), names=list(columns))


class LogWriter:
    """Writes wire-form rows to ``path`` as ``fmt``; use as a context manager.

    The context length is taken from the first row; every later row must match it.
    Rows go to a temporary file beside ``path`` (``.NAME.<random>.part``), renamed over
    ``path`` only by a successful :meth:`close`: a failure (an exception out of the
    ``with`` block, or :meth:`abort`) removes it and leaves whatever ``path`` held.
    """

    def __init__(self, path: Path | str, fmt: LogFormat | None = None) -> None:
        self.path = Path(path)
        self.format: LogFormat = fmt or format_from_path(path)
        if self.format not in LOG_FORMATS:
            raise ValueError(f"format must be one of {LOG_FORMATS}, got {self.format!r}")
        if self.format not in ("ndjson", "dsjson"):
            _pyarrow()
        self.rows_total = 0
        self._pending: list[dict[str, Any]] = []
        self._n_features: int | None = None
        self._sink: Any = None
        self._text: IO[bytes] | None = None
        self._closed = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # created here (exclusively, under the umask) so the final file gets ordinary modes
        self.partial_path = self.path.with_name(f".{self.path.name}.{secrets.token_hex(6)}.part")
        handle = self.partial_path.open("xb")
        if self.format in ("ndjson", "dsjson"):
            self._text = handle
        else:
            handle.close()  # pyarrow opens the path itself

    def write(self, rows: Iterable[dict[str, Any]]) -> None:
        """Append rows (wire form)."""
        for row in rows:
            n = len(row["context"])
            if isinstance(row["context"], dict) and self._text is None:
                raise ValueError(
                    f"row offset {row.get('offset')}: a context of named features has no "
                    f"flat columns in {self.format}: export the log as NDJSON (.ndjson)"
                )
            if self._n_features is None:
                self._n_features = n
            elif n != self._n_features and not isinstance(row["context"], dict):
                raise ValueError(
                    f"row offset {row.get('offset')}: context has {n} values, "
                    f"earlier rows have {self._n_features}"
                )
            if self._text is not None:
                line = dsjson_event(row) if self.format == "dsjson" else row
                self._text.write(orjson.dumps(line) + b"\n")
            else:
                self._pending.append(row)
                if len(self._pending) >= BATCH_ROWS:
                    self._flush()
            self.rows_total += 1

    def _flush(self) -> None:
        if not self._pending or self._n_features is None:
            return
        batch = rows_to_arrow(self._pending, self._n_features)
        self._pending = []
        if self._sink is None:
            self._sink = self._open_sink(batch.schema)
        self._sink.write_batch(batch)

    def _open_sink(self, schema: Any) -> Any:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            # dictionary pages only pay for the repetitive text column
            return pq.ParquetWriter(
                str(self.partial_path), schema, compression="zstd", use_dictionary=["source"]
            )
        import pyarrow.csv as pacsv

        return pacsv.CSVWriter(str(self.partial_path), schema)

    def close(self) -> None:
        """Flush, close and move the file into place; an empty log still gets a file.

        If the flush fails the partial file is removed and ``path`` keeps what it held.
        """
        if self._closed:
            return
        try:
            if self._text is not None:
                self._text.flush()
                os.fsync(self._text.fileno())
                self._text.close()
                self._text = None
            else:
                self._flush()
                if self._sink is None:
                    pa = _pyarrow()
                    self._sink = self._open_sink(
                        pa.schema([(c, pa.float64()) for c in FLAT_COLUMNS])  # an empty log
                    )
                self._sink.close()
                self._sink = None
            os.replace(self.partial_path, self.path)
        except BaseException:
            self.abort()
            raise
        self._closed = True

    def abort(self) -> None:
        """Drop what was written: the partial file is removed, ``path`` is left as it was."""
        if self._closed:
            return
        self._closed = True
        self._pending = []
        for handle in (self._text, self._sink):
            if handle is not None:
                with contextlib.suppress(Exception):
                    handle.close()
        self._text = self._sink = None
        with contextlib.suppress(FileNotFoundError):
            self.partial_path.unlink()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def open_log_writer(path: Path | str, fmt: LogFormat | None = None) -> LogWriter:
    """A :class:`LogWriter` for ``path`` (format from the name unless given)."""
    return LogWriter(path, fmt)
