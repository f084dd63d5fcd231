"""The interaction log: joined (decision, feedback) rows, their file formats and readers.

One row per decided-and-answered event; the same fields travel as NDJSON (the
service's ``GET /v1/models/{name}/log``), Parquet and CSV (``banditree log export``),
and every reader returns a :class:`LogTable` that ``banditree evaluate`` and
``banditree simulate --logged`` consume.  The simulator's ``decisions.csv`` is read
by the same CSV reader.
"""

from banditree.logs.readers import read_log, table_from_rows
from banditree.logs.record import FLAT_COLUMNS, log_row, validate_row
from banditree.logs.table import LogTable
from banditree.logs.writers import LOG_FORMATS, LogWriter, format_from_path, open_log_writer

__all__ = [
    "FLAT_COLUMNS",
    "LOG_FORMATS",
    "LogTable",
    "LogWriter",
    "format_from_path",
    "log_row",
    "open_log_writer",
    "read_log",
    "table_from_rows",
    "validate_row",
]
