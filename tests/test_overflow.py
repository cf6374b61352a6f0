"""Counts whose sums do not fit int64 fail the run, naming the n-gram and the count; nothing wraps."""

import gzip
import json

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from conftest import import_ok, ngrams_of, run_cli
from ngramflow.transforms import checked
from ngramflow.transforms.mkn import native
from ngramflow.transforms.mkn.context import ContextSumOverflow, check_sum, unigram_context_table
from ngramflow.transforms.mkn.discount import Discounts

BIG = 5 * 10**18  # fits int64; two of them do not
MAX = 2**63 - 1


def _write(folder, name, lines):
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / name, "wt", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def _fails(tmp_path, capsys, inputs, *options) -> str:
    out = tmp_path / "out"
    assert run_cli("import", *inputs, "--output", out, "--quiet", *options) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not (out / "_manifest.json").exists()
    assert "sums to more than 9223372036854775807" in (out / "_INCOMPLETE").read_text()
    return err


@pytest.mark.parametrize("files, options, named", [
    # two year rows of one n-gram in one chunk: the per-file collapse
    ({"a.gz": ["big\t1990\t%d\t1" % BIG, "big\t1991\t%d\t1" % BIG]}, [], "match_count of n-gram 'big'"),
    # the volume count, with per-year series
    ({"a.gz": ["big\t1990\t1\t%d" % BIG, "big\t1991\t1\t%d" % BIG]}, ["--keep-years"], "volume_count of n-gram 'big'"),
    # the same n-gram in two files: the merge of run tables
    ({"a.gz": ["big\t1990\t%d\t1" % BIG], "b.gz": ["big\t1991\t%d\t1" % BIG]}, [], "match_count of n-gram 'big'"),
    # case variants summed by --lowercase
    ({"a.gz": ["Big\t1990\t%d\t1" % BIG, "big\t1990\t%d\t1" % BIG]}, ["--lowercase"], "match_count of n-gram 'big'"),
    # two tuples of one 2020 row, same year, with per-year series
    ({"a.gz": ["big\t1990,%d,1\t1990,%d,1" % (BIG, BIG)]}, ["--keep-years"], "match_count of n-gram 'big'"),
    # each n-gram fits, their order's total in the manifest does not
    ({"a.gz": ["one\t1990\t%d\t1" % BIG, "two\t1990\t%d\t1" % BIG]}, [], "match_count of all 1-grams"),
], ids=["one-chunk", "volume-keep-years", "two-files", "lowercase", "2020-tuples", "order-total"])
def test_a_sum_that_does_not_fit_fails_the_run_naming_it(tmp_path, capsys, files, options, named):
    for name, lines in files.items():
        _write(tmp_path / "in", name, lines)
    err = _fails(tmp_path, capsys, [tmp_path / "in"], *options)
    assert named in err


def test_sums_up_to_the_maximum_are_exact(tmp_path):
    _write(tmp_path / "in", "a.gz", ["Max\t1990\t%d\t1" % (MAX - 1), "max\t1991\t1\t%d" % (MAX - 1),
                                     "other one\t1990\t1\t1"])
    _write(tmp_path / "in", "b.gz", ["max\t1992\t0\t0"])
    out = import_ok(tmp_path / "in", tmp_path / "out", "--lowercase", "--keep-years")
    assert ngrams_of(out, "ngram, match_count, volume_count") == [("max", MAX, MAX), ("other one", 1, 1)]
    orders = json.load(open(out + "/_manifest.json"))["orders"]
    assert orders["1"]["match_count"] == MAX and orders["1"]["volume_count"] == MAX


@pytest.mark.parametrize("line", ["big\t1990\t%d\t1" % (MAX + 1), "big\t1990,1,%d" % (MAX + 1)])
def test_a_single_count_past_int64_is_a_malformed_row(tmp_path, line):
    _write(tmp_path / "in", "a.gz", [line, "ok\t1990,1,1" if "," in line else "ok\t1990\t1\t1"])
    out = import_ok(tmp_path / "in", tmp_path / "out", "--max-reject-rate", "1")
    assert ngrams_of(out, "ngram, match_count") == [("ok", 1)]
    ((reason,),) = duckdb.sql(f"SELECT reason FROM '{out}/rejects/*.parquet'").fetchall()
    assert reason.startswith("match count too large" if "\t1990\t" in line else "volume count too large")


def test_wraps_are_found_however_often_a_sum_wrapped():
    values = np.array([2**62] * 4 + [MAX] * 5 + [3, 4], np.int64)  # 2**64 wraps to 0; 5 * MAX to MAX - 4 * 2**63
    starts = np.array([0, 4, 9])
    with pytest.raises(checked.CountOverflow, match="run 0 sums"):
        checked.sum_runs(values, starts, lambda run: f"run {run}")
    with pytest.raises(checked.CountOverflow, match="run 1 sums"):
        checked.sum_runs(values[4:], starts[1:] - 4, lambda run: f"run {run + 1}")
    assert checked.sum_runs(values[9:], np.array([0]), str).tolist() == [7]
    assert checked.sum_runs(np.array([MAX - 1, 1, 5]), np.array([0, 2]), str).tolist() == [MAX, 5]


def test_an_mkn_context_sum_past_int64_is_an_mkn_error():
    def overflow(counts):
        successors = pa.table({"ngram": pa.array([f"a {i}" for i in range(len(counts))], pa.large_string()),
                               "a": pa.array(counts, pa.int64())})
        lower = pa.table({"ngram": pa.array(["a"], pa.large_string()), "a": [1], "p": [0.5]})
        return native.contexts(successors, lower, Discounts(0.5, 1.0, 1.5), 1).overflow

    check_sum(2, overflow([MAX - 1, 1]))
    with pytest.raises(ContextSumOverflow, match="ngramflow mkn error: the adjusted_sum of 2-gram context 'a'"):
        check_sum(2, overflow([MAX - 1, 1, 1]))
    assert unigram_context_table([MAX, 0, 0, 2]).to_pylist()[0]["adjusted_sum"] == MAX
    with pytest.raises(ContextSumOverflow, match="the adjusted_sum of the unigram context"):
        unigram_context_table([MAX + 1, 0, 0, 2])
