"""Parse a chunk of lines into an Arrow table of year rows, at C speed where possible.

A chunk is a run of whole lines of one file. Its rows come out as a table with
ROW_SCHEMA: one row per (n-gram, year), in file order. Clean chunks are parsed
by Arrow (the CSV reader for the one-row-per-year formats, string kernels for
the 2020 tuples) and validated with vectorized checks; a chunk with anything
unusual in it is parsed again line by line by transforms/formats.py, which
names each malformed line. Both paths accept and reject exactly the same lines.
"""

import codecs
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv

from ngramflow.schemas import MAX_ORDER, RAW_LIMIT, REJECTS, YEAR_MAX, YEAR_MIN
from ngramflow.transforms import columnar, formats

ROW_SCHEMA = pa.schema([("ngram", pa.string()), ("year", pa.int32()), ("match", pa.int64()), ("volume", pa.int64())])

_PARSE = csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False, double_quote=False,
                          newlines_in_values=False, ignore_empty_lines=False)
_COLUMNS = {
    "2012": ["ngram", "year", "match", "volume"],
    "2009": ["ngram", "year", "match", "pages", "volume"],
}


class _Unusual(Exception):
    """The fast path cannot vouch for this chunk; parse it line by line."""


def _integers(strings, type_: pa.DataType) -> pa.Array:
    """Plain decimal digits only: Arrow's cast would read "-0" as 0 and "0x1F" as hexadecimal."""
    if not pc.all(pc.ascii_is_decimal(strings)).as_py():
        raise _Unusual("a number that is not plain digits")
    return strings.cast(type_)


_ODD_FIELD_STARTS = np.array([ord("-"), ord("+"), ord(" ")], np.uint8)


def _odd_tsv(chunk: bytes) -> bool:
    """Whether Arrow's CSV reader might read this chunk otherwise than formats.py.

    It drops a byte order mark at the start, reads "-0" as 0 and "0x1F" as
    hexadecimal, and trims a field's leading spaces. So a chunk that starts with
    a byte order mark, or has a field starting with a sign, a space or "0x",
    takes the careful path; all are rare. Every numeric field follows a tab.
    """
    if chunk.startswith(codecs.BOM_UTF8):
        return True
    data = np.frombuffer(chunk, np.uint8)
    after = np.flatnonzero(data[:-2] == 9) + 1
    first, second = data[after], data[after + 1]
    hexadecimal = (first == ord("0")) & ((second | 0x20) == ord("x"))
    return bool(hexadecimal.any() or np.isin(first, _ODD_FIELD_STARTS).any())


def _read_tsv(chunk: bytes, fmt: str) -> pa.Table:
    if _odd_tsv(chunk):
        raise _Unusual("a byte order mark, or a signed, hexadecimal-looking or padded number")
    names = _COLUMNS[fmt]
    types = {n: ROW_SCHEMA.field(n).type if n in ROW_SCHEMA.names else pa.int64() for n in names}
    table = csv.read_csv(
        pa.py_buffer(chunk),
        read_options=csv.ReadOptions(column_names=names, use_threads=False, block_size=len(chunk) + 1),
        parse_options=_PARSE,
        convert_options=csv.ConvertOptions(column_types=types, check_utf8=True, strings_can_be_null=False,
                                           quoted_strings_can_be_null=False, null_values=[]),
    )
    return table.drop(["pages"]) if fmt == "2009" else table


def _read_2020(chunk: bytes) -> pa.Table:
    lines = pa.array(chunk.split(b"\n")[:-1] if chunk.endswith(b"\n") else chunk.split(b"\n"), pa.binary())
    fields = pc.split_pattern(lines.cast(pa.string()), "\t")
    if pc.any(pc.less(pc.list_value_length(fields), 2)).as_py():
        raise _Unusual("a line without year tuples")
    tuples = pc.list_slice(fields, 1)
    parts = pc.split_pattern(pc.list_flatten(tuples), ",")
    if not pc.all(pc.equal(pc.list_value_length(parts), 3)).as_py():
        raise _Unusual("a malformed year tuple")
    ngram = pc.take(pc.list_element(fields, 0), pc.list_parent_indices(tuples))
    return pa.table([
        ngram,
        _integers(pc.list_element(parts, 0), pa.int32()),
        _integers(pc.list_element(parts, 1), pa.int64()),
        _integers(pc.list_element(parts, 2), pa.int64()),
    ], schema=ROW_SCHEMA)


# Legal but unusual spacing (leading, trailing, doubled, or more than MAX_ORDER
# tokens): formats.split_ngram normalises or rejects it line by line.
_ODD_SPACING = rf"^ | $|  |^$|(?:[^ ]* ){{{MAX_ORDER}}}"


def _check(table: pa.Table, starts: np.ndarray, lines: int, fmt: str) -> None:
    """Raise _Unusual unless every row passes the same checks formats.py applies.

    Counts need no sign check: a field with a sign never gets this far (_odd_tsv, _integers).
    """
    if fmt != "2020" and table.num_rows != lines:
        raise _Unusual("row count differs from line count")
    year = columnar.numpy(table["year"])
    if (year < YEAR_MIN).any() or (year > YEAR_MAX).any():
        raise _Unusual("a year out of range")
    # Rows of a run share their n-gram: one look per run is enough.
    if pc.any(pc.match_substring_regex(table["ngram"].take(pa.array(starts)), _ODD_SPACING)).as_py():
        raise _Unusual("unusual spacing")


def _line_by_line(chunk: bytes, fmt: str, path: str, first_line: int):
    parse = formats.PARSERS[fmt]
    ngrams, years, matches, volumes = [], [], [], []
    rejects = {"file": [], "line": [], "reason": [], "raw": []}
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    for number, raw in enumerate(lines, first_line):
        try:
            tokens, series = parse(formats.decode(raw))
        except formats.Malformed as bad:
            for column, value in zip(rejects, (path, number, str(bad), raw.rstrip(b"\r")[:RAW_LIMIT])):
                rejects[column].append(value)
            continue
        ngram = " ".join(tokens)
        for year, match, volume in series:
            ngrams.append(ngram)
            years.append(year)
            matches.append(match)
            volumes.append(volume)
    table = pa.table([ngrams, years, matches, volumes], schema=ROW_SCHEMA)
    return table, pa.table(rejects, schema=REJECTS)


class Parsed(NamedTuple):
    rows: pa.Table  # ROW_SCHEMA, in file order
    starts: np.ndarray  # where each run of rows with the same n-gram begins
    rejects: pa.Table  # schemas.REJECTS


def parse_fast(chunk: bytes, lines: int, fmt: str) -> Parsed | None:
    """The rows of ``chunk`` by Arrow alone, or None when the fast path cannot vouch for every line."""
    try:
        table = _read_2020(chunk) if fmt == "2020" else _read_tsv(chunk, fmt)
        starts = columnar.run_starts(table["ngram"].combine_chunks())
        _check(table, starts, lines, fmt)
        return Parsed(table, starts, REJECTS.empty_table())
    except (_Unusual, pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def parse_chunk(chunk: bytes, lines: int, fmt: str, path: str, first_line: int) -> Parsed:
    """The rows and rejects of ``chunk``: ``lines`` whole lines, the first numbered ``first_line``."""
    parsed = parse_fast(chunk, lines, fmt)
    if parsed is not None:
        return parsed
    table, rejects = _line_by_line(chunk, fmt, path, first_line)
    return Parsed(table, columnar.run_starts(table["ngram"].combine_chunks()), rejects)
