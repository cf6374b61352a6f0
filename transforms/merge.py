"""Merge run tables: one row per n-gram, summed over every run of it.

A run table (transforms/collapse.py) may hold the same n-gram several times: a run
cut by a chunk boundary, case variants after --lowercase, or the same n-gram
in two files. ``merge_runs`` sums them into one row per n-gram, sorted by
n-gram, in vectorized code; ``SumRunTables`` is the CombineFn that does it per
shard, so Beam can combine partial tables before the shuffle.
"""

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.transforms import columnar
from ngramflow.transforms.sizing import COMPACT_ROWS


#: Beam metrics of the bytes one key's values reach, read back into the manifest (key_sizes): on Flink a
#: group is one Java List (batch) or one RocksDB value (checkpointed), which sizing.KEY_BUDGET bounds.
METRICS_NAMESPACE = "ngramflow"


def table_bytes(tables) -> int:
    return sum(t.nbytes for t in tables)


def record_bytes(name: str, nbytes: int) -> None:
    Metrics.distribution(METRICS_NAMESPACE, name).update(nbytes)


def key_sizes(result) -> dict:
    """{metric name: largest value} of the record_bytes distributions of a finished pipeline."""
    largest = {}
    for found in result.metrics().query()["distributions"]:
        value = found.committed or found.attempted
        if found.key.metric.namespace == METRICS_NAMESPACE and value:
            name = found.key.metric.name  # one distribution per step that records it: the largest of all
            largest[name] = max(largest.get(name, 0), value.max)
    return largest


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def merge_runs(runs: pa.Table) -> pa.Table:
    """One row per n-gram, sorted by n-gram (UTF-8 byte order), same schema."""
    if runs.num_rows == 0:
        return runs
    runs = runs.take(pc.sort_indices(runs, [("ngram", "ascending")]))
    keys = runs["ngram"].combine_chunks()
    starts = columnar.run_starts(keys)
    if len(starts) == runs.num_rows:
        return runs.combine_chunks()
    ngrams = keys.take(pa.array(starts))
    columns = [
        ngrams,
        pa.array(columnar.sum_by_ngram(columnar.numpy(runs["match"]), starts, ngrams, "match_count")),
        pa.array(columnar.sum_by_ngram(columnar.numpy(runs["volume"]), starts, ngrams, "volume_count")),
        columnar.mask_array(np.bitwise_or.reduceat(columnar.mask_matrix(runs["years"]), starts, axis=0)),
    ]
    if "year_series" in runs.column_names:
        # Each year's sum is part of its n-gram's total, which fits: the series cannot overflow.
        ids = columnar.run_ids(starts, runs.num_rows)
        parent, years, matches, volumes = columnar.explode_series(keys, runs["year_series"])
        columns.append(columnar.series_by_run(ids[parent], years, matches, volumes, len(starts)))
    return pa.Table.from_arrays(columns, schema=runs.schema)


class SumRunTables(beam.CombineFn):
    """Run tables of one shard -> one merged table (one row per n-gram).

    The accumulator is a list of tables, compacted with ``merge_runs`` once it
    buffers COMPACT_ROWS rows more than at its last compaction, so a
    combiner's memory follows the number of distinct n-grams, not the number
    of runs it has seen.
    """

    def create_accumulator(self):
        return []

    def add_input(self, accumulator, table):
        accumulator.append(table)
        if len(accumulator) > 1 and sum(t.num_rows for t in accumulator[1:]) >= COMPACT_ROWS:
            accumulator[:] = [merge_runs(_concat(accumulator))]
        return accumulator

    def merge_accumulators(self, accumulators):
        tables = [table for acc in accumulators for table in acc]
        record_bytes("ngram group bytes", table_bytes(tables))
        return [merge_runs(_concat(tables))] if len(tables) > 1 else tables

    def extract_output(self, accumulator):
        record_bytes("ngram accumulator bytes", table_bytes(accumulator))
        return merge_runs(_concat(accumulator))
