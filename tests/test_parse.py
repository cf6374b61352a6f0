"""The native kernel vouches for the sample files and gives the careful path's runs; spot lines it may
not vouch for get the careful answer."""

import gzip
import os

import pyarrow as pa
import pytest

from conftest import SAMPLE, gz_files
from ngramflow.transforms import _kernel
from ngramflow.transforms import columnar, kernel, parse
from ngramflow.transforms.collapse import collapse
from ngramflow.transforms.policy import RowPolicy


def careful(chunk, fmt, policy=None, keep_years=False):
    """(runs, dropped, rejects) of the reference: parse.line_by_line, then collapse (default policy: RowPolicy())."""
    policy = policy or RowPolicy()
    rows, rejects = parse.line_by_line(chunk, fmt, "f", 1)
    runs, dropped = collapse(rows, columnar.run_starts(rows["ngram"].combine_chunks()), policy, keep_years)
    return runs, dropped, rejects


@pytest.mark.parametrize("fmt", ["2012", "2020"])
@pytest.mark.parametrize("policy, keep_years", [
    (RowPolicy(), False), (RowPolicy(pos="keep"), True), (RowPolicy(lowercase=True, year_min=1900, year_max=1950), True)])
def test_the_kernel_vouches_for_the_sample_and_gives_the_careful_runs(fmt, policy, keep_years):
    files = gz_files(os.path.join(SAMPLE, fmt))
    chunk = b"".join(gzip.open(f).read() for f in files)
    assert _kernel.collapse_chunk(chunk, fmt, 1400, 2100, True, False, False) is not None
    found = kernel.collapse_chunk(chunk, fmt, "f", 1, policy, keep_years)
    runs, dropped, rejects = careful(chunk, fmt, policy, keep_years)
    assert found.rejects.num_rows == 0 == rejects.num_rows
    assert found.runs.equals(runs) and found.dropped == dropped
    assert runs.num_rows > 1000


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
    found = kernel.collapse_chunk(chunk, "2012", "f", 1, RowPolicy(), False)
    runs, dropped, rejects = careful(chunk, "2012")
    assert found.runs.equals(runs) and found.rejects.equals(rejects) and found.dropped == dropped
    assert pa.compute.sum(found.runs["match"]).as_py() >= 1
