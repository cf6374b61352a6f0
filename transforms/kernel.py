"""A chunk of lines to its run table, by the native kernel (native/, Rust), or line by line where it must.

The kernel does the whole per-chunk work of a well-formed chunk in one pass:
lines and fields by byte scanning, numbers, the documented malformations, the
row policy and the collapse of sorted runs. Where a chunk has a line it cannot
vouch for (a malformed line, or a legal oddity such as padded numbers or
doubled spaces), it answers None and the chunk is read by the careful Python
parser (parse.line_by_line) and collapsed by collapse.collapse: that pair is
the reference, and it alone names rejects, so their reasons are the reference's
by construction (they quote fields with Python's repr, which a second
implementation would have to copy exactly). Such chunks are rare in Google's
files; tests/test_kernel_agrees.py holds both routes to the same answers.
"""

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ngramflow.schemas import REJECTS, YEAR_MAX, YEAR_MIN, YEAR_SERIES
from ngramflow.transforms import columnar
from ngramflow.transforms.collapse import collapse, run_schema
from ngramflow.transforms.native import _kernel, count_lines, strictly_ascending
from ngramflow.transforms.parse import line_by_line
from ngramflow.transforms.policy import RowPolicy, fold_case


class Collapsed(NamedTuple):
    runs: pa.Table  # collapse.run_schema(keep_years)
    dropped: int  # year rows the policy dropped
    rejects: pa.Table  # schemas.REJECTS
    ascending: bool  # whether each run's n-gram is above the one before (UTF-8 byte order)
    lines: int  # the chunk's lines


def _buffer(data: bytes, type_: pa.DataType, n: int) -> pa.Array:
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])


def _runs(found: tuple, keep_years: bool) -> tuple[pa.Table, int, bool]:
    offsets, keys, fold_here, matches, volumes, mask_offsets, masks, dropped, series, ascending, _ = found
    n = len(matches) // 8
    ngrams = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(keys)])
    fold_here = np.frombuffer(fold_here, np.bool_)
    if fold_here.any():  # n-grams beyond ASCII: Python's case rules are the reference
        folded = ngrams.to_pylist()
        for i in np.flatnonzero(fold_here):
            folded[i] = " ".join(fold_case(t) for t in folded[i].split(" "))
        ngrams = pa.array(folded, pa.string())
        ascending = strictly_ascending(ngrams)
    columns = [ngrams, _buffer(matches, pa.int64(), n), _buffer(volumes, pa.int64(), n),
               pa.Array.from_buffers(columnar.MASK_TYPE, n, [None, pa.py_buffer(mask_offsets), pa.py_buffer(masks)])]
    if keep_years:
        offsets, years, year_matches, year_volumes = series
        values = len(year_matches) // 8
        columns.append(pa.ListArray.from_arrays(_buffer(offsets, pa.int32(), n + 1), pa.StructArray.from_arrays(
            [_buffer(years, pa.int16(), values), _buffer(year_matches, pa.int64(), values),
             _buffer(year_volumes, pa.int64(), values)], fields=list(YEAR_SERIES.value_type)), type=YEAR_SERIES))
    return pa.Table.from_arrays(columns, schema=run_schema(keep_years)), dropped, ascending


def collapse_natively(chunk: bytes | memoryview, fmt: str, policy: RowPolicy, keep_years: bool) -> Collapsed | None:
    """The runs, dropped row count and lines of ``chunk``, whole lines (bytes, or a view of a reader's buffer:
    what is returned holds none of it), by the kernel; None where it cannot vouch for a line (then
    collapse_line_by_line, which needs the number of the chunk's first line to name its rejects)."""
    # Every row's year is within [YEAR_MIN, YEAR_MAX]: a window is the same clamped into one year beyond.
    year_min = min(max(YEAR_MIN if policy.year_min is None else policy.year_min, YEAR_MIN), YEAR_MAX + 1)
    year_max = max(min(YEAR_MAX if policy.year_max is None else policy.year_max, YEAR_MAX), YEAR_MIN - 1)
    found = _kernel.collapse_chunk(chunk, fmt, year_min, year_max, policy.pos == "drop", policy.lowercase,
                                   keep_years)
    if found is None:
        return None
    runs, dropped, ascending = _runs(found, keep_years)
    return Collapsed(runs, dropped, REJECTS.empty_table(), ascending, found[-1])


def collapse_line_by_line(chunk: bytes | memoryview, fmt: str, path: str, first_line: int, policy: RowPolicy,
                          keep_years: bool) -> Collapsed:
    """collapse_natively's answer by the reference route, which also names the rejects of ``chunk``: whole
    lines of ``path``, the first numbered ``first_line``."""
    rows, rejects = line_by_line(bytes(chunk), fmt, path, first_line)
    runs, dropped = collapse(rows, columnar.run_starts(columnar.whole(rows["ngram"])), policy, keep_years)
    return Collapsed(runs, dropped, rejects, strictly_ascending(columnar.whole(runs["ngram"])), count_lines(chunk))


def collapse_chunk(chunk: bytes | memoryview, fmt: str, path: str, first_line: int, policy: RowPolicy,
                   keep_years: bool) -> Collapsed:
    """The runs, dropped row count, rejects and lines of ``chunk``: whole lines of ``path``, the first numbered
    ``first_line``; by the kernel where it vouches for every line, else by the reference route."""
    found = collapse_natively(chunk, fmt, policy, keep_years)
    return found if found is not None else collapse_line_by_line(chunk, fmt, path, first_line, policy, keep_years)
