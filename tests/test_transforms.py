"""The import's composite transforms on real pipelines, in Beam's style (TestPipeline, assert_that):
reading a file, totalling n-grams across files, and the MKN stage on a text's counts."""

import gzip
import math
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from mkn_reference import SHORT_TEXT, SHORT_TEXT_ORDER_2

from ngramflow.corpus.text import count_ngrams, sentences
from ngramflow.transforms.collapse import collapse
from ngramflow.transforms.columnar import run_starts
from ngramflow.transforms.mkn.discount import KENLM_FALLBACK
from ngramflow.transforms.mkn.stage import EstimateMkn
from ngramflow.transforms.mkn.tables import Work
from ngramflow.transforms.parse import ROW_SCHEMA
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.lines import ReadSettings
from ngramflow.transforms.read import ReadNgramFiles
from ngramflow.transforms.units import pack_files
from ngramflow.transforms.total import SummarizeOrders, TotalNgramRanges


def _rows(tables):
    """Every row of a table, as a tuple in column order: pipelines compare rows, not tables."""
    return [tuple(row.values()) for row in tables.to_pylist()]


def _close(expected, actual) -> bool:
    """Equal, floats to within 1e-12 (the stage's arithmetic differs from the hand computation's)."""
    if isinstance(expected, float):
        return isinstance(actual, float) and math.isclose(expected, actual, rel_tol=0, abs_tol=1e-12)
    if isinstance(expected, (tuple, list)):
        return len(expected) == len(actual) and all(map(_close, expected, actual))
    return expected == actual


LINES = [
    b"alpha\t1990\t3\t1",
    b"alpha\t1991\t2\t1",
    b"beta gamma\t2000\t7\t2",
    b"not a row",  # line 4: rejected
    b"burnt_VERB toast\t2000\t4\t4",  # POS-tagged: dropped by the default policy
    b"delta\t2001\t1\t1",
]


def test_reading_a_file_gives_runs_rejects_and_file_stats(tmp_path):
    path = str(tmp_path / "eng-2-00000-of-00001.gz")
    with gzip.open(path, "wb") as fh:
        fh.write(b"\n".join(LINES) + b"\n")
    units = pack_files([(path, os.path.getsize(path))], target_bytes=1 << 20)

    with TestPipeline() as p:
        read = p | beam.Create(units) | ReadNgramFiles(ReadSettings())
        runs = read.runs | "Run rows" >> beam.FlatMap(lambda t: [(r[0], r[1], r[2]) for r in _rows(t)])
        rejects = read.rejects | "Reject rows" >> beam.FlatMapTuple(lambda _name, t: _rows(t))
        stats = read.file_stats | "Stats" >> beam.FlatMapTuple(lambda _name, records: records)

        assert_that(runs, equal_to([("alpha", 5, 2), ("beta gamma", 7, 2), ("delta", 1, 1)]), label="runs")
        assert_that(rejects, equal_to([
            (path, 4, "wrong field count for the 2012 format: expected 4, got 1", b"not a row"),
        ]), label="rejects")
        assert_that(stats, equal_to([{
            "path": path, "size": os.path.getsize(path), "format": "2012", "rows_read": 6, "rows_rejected": 1,
            "rows_filtered": 1, "status": "ok", "reason": None, "slice": 0,
        }]), label="file stats")


def _run_table(*year_rows):
    """The run table read.py would emit for these (n-gram, year, match, volume) rows of one chunk."""
    rows = pa.Table.from_pylist([dict(zip(ROW_SCHEMA.names, r)) for r in year_rows], schema=ROW_SCHEMA)
    runs, _dropped = collapse(rows, run_starts(rows["ngram"].combine_chunks()), RowPolicy(), keep_years=False)
    return runs


def test_totalling_merges_every_run_of_an_ngram_and_applies_the_minimum_count():
    # Two files and a chunk boundary: "a b" comes in three runs, "c" in two, "rare" once.
    run_tables = [
        _run_table(("a b", 1900, 2, 1), ("a b", 1901, 3, 1), ("c", 1950, 10, 2)),
        _run_table(("a b", 1901, 1, 1)),
        _run_table(("a b", 2000, 4, 2), ("c", 1950, 5, 1), ("c", 1990, 1, 1), ("rare", 1990, 2, 1)),
    ]
    with TestPipeline() as p:
        totals = p | beam.Create(run_tables) | TotalNgramRanges(min_count=3, keys=3)
        rows = totals | "N-gram rows" >> beam.FlatMapTuple(lambda _range, t: _rows(t))
        orders = totals | SummarizeOrders()

        # (ngram, order, match, volume, first year, last year, distinct years)
        assert_that(rows, equal_to([
            ("a b", 2, 10, 5, 1900, 2000, 3),
            ("c", 1, 16, 4, 1950, 1990, 2),
        ]), label="totals")
        assert_that(orders, equal_to([
            ("order-1", {"order": 1, "ngrams": 1, "match_count": 16, "volume_count": 4}),
            ("order-2", {"order": 2, "ngrams": 1, "match_count": 10, "volume_count": 5}),
        ]), label="order totals")


def test_mkn_stage_on_a_tiny_text_gives_the_hand_computed_model(tmp_path):
    # The order-2 model of "a b / a b / b", computed by hand in mkn_reference.py
    # (test_short_sentences_order_2_by_hand): |V| = 4, unigram discounts are
    # KenLM's fallback (t3 = 0), bigram discounts 0.2, 1.7, 3 from t = 1, 2, 1, 0.
    counts = count_ngrams(sentences(SHORT_TEXT.splitlines()), 2)
    expected = SHORT_TEXT_ORDER_2
    model_rows = [(ngram, ngram.count(" ") + 1, count, math.log10(prob), None if b is None else math.log10(b))
                  for ngram, (count, prob, b) in expected.items()]

    parts = []
    for order in (1, 2):
        path = tmp_path / f"order-{order}.parquet"
        grams = sorted(g for g in counts if g.count(" ") + 1 == order)
        pq.write_table(pa.table({"ngram": grams, "match_count": [counts[g] for g in grams]}), path)
        parts.append((order, str(path)))
    work = Work(str(tmp_path / "work"), buckets=3)

    with TestPipeline() as p:
        model = p | beam.Create(parts) | EstimateMkn(work, 2, KENLM_FALLBACK, str(tmp_path / "out"))
        discounts = model["discounts"] | "Discounts" >> beam.Map(
            lambda r: (r["order"], r["count_of_counts"], r["discounts"], r["discount_source"]))

        assert_that(discounts, equal_to([
            (1, [2, 1, 0, 0], [0.5, 1.0, 1.5], "fallback"),
            (2, [1, 2, 1, 0], [0.2, 1.7, 3.0], "estimated"),
        ], equals_fn=_close), label="discounts")
        assert_that(model["orphans"], equal_to([(2, 0)]), label="orphans")  # order 2: none left out
    written = pq.read_table(tmp_path / "out" / "mkn" / "ngrams", partitioning=None).to_pylist()
    rows = sorted((r["ngram"], r["order"], r["adjusted_count"], r["log10_prob"], r["log10_backoff"]) for r in written)
    assert _close(sorted(model_rows), rows)
