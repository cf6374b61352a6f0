"""End-to-end imports on the embedded runner, checked against DuckDB over the same files."""

import json
import os

import apache_beam as beam
import duckdb
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.worker import statesampler
from apache_beam.testing.util import assert_that, equal_to

from conftest import (NOT_TAGGED, SAMPLE, assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012,
                      reference_2020, vocabulary_of)
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.embedded import SAMPLING_MS
from ngramflow.pipeline.run import direct_runner_args


@pytest.fixture(scope="module")
def big_imports(big_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("big-imports")
    return {
        fmt: import_ok(big_corpus / fmt, out / fmt, "--pos", "keep", "--workers", "2")
        for fmt in ("2012", "2020")
    }


def test_2012_totals_equal_duckdb_row_by_row(big_corpus, big_imports):
    ours = ngrams_of(big_imports["2012"])
    assert len(ours) > 100_000
    assert_same_rows(ours, reference_2012(gz_files(big_corpus / "2012")))


def test_2020_totals_equal_duckdb_row_by_row(big_corpus, big_imports):
    assert_same_rows(ngrams_of(big_imports["2020"]), reference_2020(gz_files(big_corpus / "2020")))


def test_both_encodings_give_identical_datasets(big_imports):
    assert ngrams_of(big_imports["2012"]) == ngrams_of(big_imports["2020"])
    assert vocabulary_of(big_imports["2012"]) == vocabulary_of(big_imports["2020"])


def test_manifest_describes_the_run(big_corpus, big_imports):
    manifest = json.load(open(os.path.join(big_imports["2012"], "_manifest.json")))
    files = gz_files(big_corpus / "2012")
    assert manifest["status"] == "complete"
    assert sorted(i["path"] for i in manifest["inputs"]) == files
    assert {i["format"] for i in manifest["inputs"]} == {"2012"}
    assert sum(i["rows_read"] for i in manifest["inputs"]) == manifest["rows_read"] >= 1_000_000
    assert manifest["rows_rejected"] == 0
    counted = duckdb.sql(f"""SELECT "order", count(*), sum(match_count) FROM
                             read_parquet('{big_imports['2012']}/ngrams/*/*.parquet') GROUP BY ALL""").fetchall()
    assert {str(o): (n, m) for o, n, m in counted} == {
        o: (s["ngrams"], s["match_count"]) for o, s in manifest["orders"].items()}
    assert manifest["options"]["pos"] == "keep"
    assert manifest["versions"]["apache_beam"] == "2.62.0"


def test_vocabulary_is_dense_and_ordered(big_imports):
    vocab = vocabulary_of(big_imports["2012"])
    assert [v[0] for v in vocab] == list(range(len(vocab)))
    assert [v[1] for v in vocab[:3]] == ["<unk>", "_START_", "_END_"]
    ranked = vocab[3:]
    key = [(m is None, -(m or 0), t.encode()) for _, t, m, _ in ranked]
    assert key == sorted(key)
    tokens = {t for _, t, _, _ in vocab}
    in_ngrams = {r[0] for r in duckdb.sql(f"""SELECT DISTINCT unnest(string_split(ngram, ' '))
                 FROM read_parquet('{big_imports['2012']}/ngrams/*/*.parquet')""").fetchall()}
    assert in_ngrams | {"<unk>", "_START_", "_END_"} == tokens


def test_default_policy_drops_pos_tagged_ngrams(tmp_path):
    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "out")
    reference = reference_2012(gz_files(os.path.join(SAMPLE, "2012")), where=NOT_TAGGED)
    assert_same_rows(ngrams_of(dataset), reference)
    assert any("_START_" in r[0] for r in ngrams_of(dataset)), "boundary tokens must survive the POS filter"


def test_lowercase_year_window_and_min_count(tmp_path):
    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "out", "--lowercase",
                        "--year-min", "1900", "--year-max", "1990", "--min-count", "40")
    lowered = "replace(replace(lower(ngram), '_start_', '_START_'), '_end_', '_END_')"
    reference = reference_2012(gz_files(os.path.join(SAMPLE, "2012")), where=NOT_TAGGED,
                               year_where="year BETWEEN 1900 AND 1990", key=lowered)
    assert_same_rows(ngrams_of(dataset), reference.filter("match_count >= 40"))


def test_keep_years_series_sum_to_the_totals(tmp_path):
    dataset = import_ok(os.path.join(SAMPLE, "2020"), tmp_path / "out", "--keep-years")
    bad = duckdb.sql(f"""
        SELECT ngram FROM read_parquet('{dataset}/ngrams/*/*.parquet')
        WHERE match_count != list_sum([s.match_count for s in year_series])
           OR volume_count != list_sum([s.volume_count for s in year_series])
           OR years != len(year_series) OR first_year != year_series[1].year
           OR last_year != year_series[-1].year""").fetchall()
    assert bad == []


def test_rerun_gives_identical_content(tmp_path):
    first = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "a")
    second = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "b", "--workers", "2")
    assert ngrams_of(first) == ngrams_of(second)
    assert vocabulary_of(first) == vocabulary_of(second)


class _SamplingPeriod(beam.DoFn):
    """Each element -> the sampling period of the state sampler of the bundle it is in."""

    def process(self, _):
        yield statesampler.get_current_tracker().sampling_period_ms


@pytest.mark.parametrize("workers", [1, 2])
def test_embedded_bundles_end_without_waiting_for_a_slow_sampler(workers):
    # A bundle ends by joining its state sampler's thread, which sleeps out its period first: Beam's 200 ms
    # left the cores idle at the end of every long bundle (pipeline/embedded.py).
    options = ImportOptions(inputs=[SAMPLE], output="unused", workers=workers)
    with beam.Pipeline(options=PipelineOptions(direct_runner_args(options))) as pipeline:
        periods = pipeline | beam.Create(range(4)) | beam.Reshuffle() | beam.ParDo(_SamplingPeriod())
        assert_that(periods, equal_to([SAMPLING_MS] * 4))
