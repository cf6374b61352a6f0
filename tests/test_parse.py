"""The Arrow fast path and the line-by-line path agree on every line."""

import gzip
import os

import pyarrow as pa
import pytest

from conftest import SAMPLE, gz_files
from ngramflow.transforms import parse


def _slow(chunk, fmt):
    table, rejects = parse._line_by_line(chunk, fmt, "f", 1)
    return table, rejects


@pytest.mark.parametrize("fmt", ["2012", "2020"])
def test_fast_path_equals_line_by_line_on_the_sample(fmt):
    files = gz_files(os.path.join(SAMPLE, fmt))
    chunk = b"".join(gzip.open(f).read() for f in files)
    fast = parse.parse_chunk(chunk, chunk.count(b"\n"), fmt, "f", 1)
    slow, rejects = _slow(chunk, fmt)
    assert fast.rejects.num_rows == 0 == rejects.num_rows
    assert fast.rows.equals(slow)
    assert fast.rows.num_rows > 50_000


@pytest.mark.parametrize("line", [
    b"a\t1990\t0x10\t2",           # Arrow reads hex; we do not
    b"a\t1990\t0X10\t2",
    b"a\t1990\t 0x10\t2",
    b"a\t1990\t 5\t2",              # padded numbers are fine on both paths
    b"a  b\t1990\t5\t2",            # doubled space: normalised
    b"a b c d e f\t1990\t5\t2",     # too many tokens
    b"a\t1990\t-5\t2",
    b"a\t2101\t5\t2",
    b"a\t1990\t99999999999999999999\t2",
    b"caf\xc3\xa9\t1990\t5\t2\r",
    b"\xff\t1990\t5\t2",
])
def test_every_path_gives_the_careful_answer(line):
    chunk = b"x\t1990\t1\t1\n" + line + b"\n"
    fast = parse.parse_chunk(chunk, 2, "2012", "f", 1)
    slow, rejects = _slow(chunk, "2012")
    assert fast.rows.equals(slow) and fast.rejects.equals(rejects)
    assert pa.compute.sum(fast.rows["match"]).as_py() >= 1
