"""The log-structured merge combiner (the vocabulary's token tables): equal to one merge of everything,
whatever order Beam calls it in; and merge_runs, which sums a range's pieces of runs in any order."""

import random

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.testing.util import assert_that, equal_to

from ngramflow.transforms import columnar
from ngramflow.transforms.collapse import run_schema
from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.vocabulary import TOKENS, MergeTokenTables, merge_tokens


def run_table(rng: np.random.Generator, rows: int, keep_years: bool) -> pa.Table:
    """Unsorted runs over a small vocabulary, so that n-grams repeat within and across tables."""
    ngrams = pa.array([f"w{a} w{b}" for a, b in rng.integers(0, 60, size=(rows, 2))])
    years = rng.integers(1800, 2020, size=rows)
    columns = [ngrams, pa.array(rng.integers(1, 1000, rows)), pa.array(rng.integers(1, 10, rows)),
               columnar.mask_array(columnar.year_masks(years, np.arange(rows), rows))]
    if keep_years:
        columns.append(columnar.series_by_run(np.arange(rows), years, rng.integers(1, 1000, rows),
                                              rng.integers(1, 10, rows), rows))
    return pa.Table.from_arrays(columns, schema=run_schema(keep_years))


def token_table(rng: np.random.Generator, rows: int) -> pa.Table:
    """Tokens, some with a unigram count (each token has one count, or none, everywhere it appears)."""
    ids = rng.integers(0, 500, rows)
    counted = ids % 3 == 0
    return pa.table([pa.array([f"t{i}" for i in ids]), pa.array(np.where(counted, ids * 7, 0), mask=~counted),
                     pa.array(np.where(counted, ids, 0), mask=~counted)], schema=TOKENS)


def combine_in_random_order(fn, tables, rng: random.Random):
    """Add the tables to random accumulators, then merge those in a random tree of merge_accumulators calls."""
    accumulators = [fn.create_accumulator() for _ in range(rng.randint(1, 6))]
    for table in tables:
        i = rng.randrange(len(accumulators))
        accumulators[i] = fn.add_input(accumulators[i], table)
    while len(accumulators) > 1:
        rng.shuffle(accumulators)
        take = rng.randint(2, len(accumulators))
        accumulators = [fn.merge_accumulators(accumulators[:take])] + accumulators[take:]
    # What the key received, whatever the order: the bound of its group that the metrics report.
    assert accumulators[0].added == sum(t.nbytes for t in tables)
    return fn.extract_output(accumulators[0])


def canonical(table: pa.Table, key: str) -> list:
    return table.sort_by(key).to_pylist()


@pytest.mark.parametrize("keep_years", [False, True])
def test_merging_runs_gives_the_same_table_in_any_order_and_grouping(keep_years):
    rng = np.random.default_rng(5)
    tables = [run_table(rng, int(rows), keep_years) for rows in rng.integers(1, 400, 40)]
    expected = merge_runs(pa.concat_tables(tables))
    for seed in range(8):
        order = random.Random(seed).sample(tables, len(tables))
        cut = random.Random(seed).randrange(1, len(tables))
        # Pieces of a range arrive in any order; some already merged (a sorted file's runs).
        merged = merge_runs(pa.concat_tables([merge_runs(pa.concat_tables(order[:cut])), *order[cut:]]))
        # Sorted by n-gram and one row per n-gram: the same table, row for row.
        assert merged.equals(expected), f"seed {seed}"


def test_merge_token_tables_equals_one_merge_of_everything_in_any_order():
    rng = np.random.default_rng(6)
    tables = [token_table(rng, int(rows)) for rows in rng.integers(1, 300, 40)] + [TOKENS.empty_table()]
    expected = canonical(merge_tokens(pa.concat_tables(tables)), "token")
    for seed in range(8):
        assert canonical(combine_in_random_order(MergeTokenTables(), tables, random.Random(seed)), "token") \
            == expected, f"seed {seed}"


def test_the_accumulator_stays_logarithmic():
    """Each table of the stack holds more than twice the rows of the one above it: a key of n rows is held
    as at most log2(n) tables, and every row has been merged at most that many times."""
    fn = MergeTokenTables()
    stack = fn.create_accumulator()
    for i in range(300):
        # Tokens new to every table, so that merged tables keep growing.
        stack = fn.add_input(stack, pa.table([pa.array([f"t{i}-{j}" for j in range(50)]), pa.nulls(50, pa.int64()),
                                              pa.nulls(50, pa.int64())], schema=TOKENS))
        rows = [t.num_rows for t in stack]
        assert all(lower > 2 * upper for lower, upper in zip(rows, rows[1:])), rows
    assert len(stack) <= np.log2(sum(t.num_rows for t in stack)) + 1


def test_on_a_pipeline_each_key_gets_its_own_merge():
    rng = np.random.default_rng(8)
    tables = [(k % 3, token_table(rng, 100)) for k in range(30)]
    expected = [(k, canonical(merge_tokens(pa.concat_tables([t for key, t in tables if key == k])), "token"))
                for k in range(3)]
    with beam.Pipeline() as p:
        merged = (p | beam.Create(tables) | beam.CombinePerKey(MergeTokenTables())
                    | beam.MapTuple(lambda k, t: (k, canonical(t, "token"))))
        assert_that(merged, equal_to(expected))
