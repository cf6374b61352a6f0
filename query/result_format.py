"""Query results as an aligned table (for people), CSV or JSON (for programs).

A result is an Arrow table or a stream of Arrow batches (what the Python API
returns), printed as column names and row tuples. CSV and JSON stream every
row; a table has to see its rows to align them, so it shows at most TABLE_ROWS
and says how to get the rest.
"""

import csv
import datetime
import decimal
import json
import sys
from itertools import islice

import pyarrow as pa

FORMATS = ("table", "csv", "json")
TABLE_ROWS = 1000
#: Control characters (tabs in a rejected line's raw bytes) shown escaped, so they cannot break a table's columns.
_ESCAPES = {c: f"\\x{c:02x}" for c in range(32)} | {9: "\\t", 10: "\\n", 13: "\\r"}


def _plain(value):
    """A value JSON and CSV can carry: DuckDB also returns decimals, dates and bytes."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value) -> str:
    value = _csv_cell(value)  # JSON text has no control characters left to escape
    return f"{value:.6g}" if isinstance(value, float) else str(value).translate(_ESCAPES)


def _is_number(value) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def write_table(columns: list[str], rows, out) -> None:
    shown = list(islice(rows, TABLE_ROWS + 1))
    more = len(shown) > TABLE_ROWS
    shown = shown[:TABLE_ROWS]
    cells = [[_cell(v) for v in row] for row in shown]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [bool(shown) and all(row[i] is None or _is_number(row[i]) for row in shown)
               for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if right else v.ljust(w) for v, w, right in zip(values, widths, numeric)).rstrip()

    out.write(line(columns) + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        out.write(line(row) + "\n")
    if more:
        print(f"(the first {TABLE_ROWS:,} rows; add a LIMIT, or use --format csv or json for all of them)",
              file=sys.stderr)


def _csv_cell(value):
    """Full precision for numbers (CSV is for programs); lists and structs as JSON."""
    value = _plain(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


def write_csv(columns: list[str], rows, out) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(v) for v in row])


def write_json(columns: list[str], rows, out) -> None:
    """A JSON array of one object per row, written as the rows come."""
    out.write("[")
    for i, row in enumerate(rows):
        record = {c: _plain(v) for c, v in zip(columns, row)}
        out.write(("," if i else "") + "\n  " + json.dumps(record, ensure_ascii=False))
    out.write("\n]\n")


def write_result(columns: list[str], rows, fmt: str, out=None) -> None:
    {"table": write_table, "csv": write_csv, "json": write_json}[fmt](columns, rows, out or sys.stdout)


def write_arrow(result: pa.Table | pa.RecordBatchReader, fmt: str, out=None) -> None:
    """Print an answer of the API, converting one batch to Python values at a time. A result without
    columns (SQL without a statement) prints nothing."""
    if not result.schema.names:
        return
    batches = result.to_batches() if isinstance(result, pa.Table) else result
    rows = (row for batch in batches for row in zip(*(column.to_pylist() for column in batch.columns)))
    write_result(result.schema.names, rows, fmt, out)
