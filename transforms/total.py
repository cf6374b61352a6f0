"""Total every n-gram across files and chunks, apply the minimum count, and turn totals into n-gram rows.

Two ways, with the same totals: TotalNgrams shuffles run tables by shard and
merges each shard's, and SortIntoRanges cuts the shards' totals into sorted
n-gram ranges (Flink's checkpointed mode: shards and ranges live in keyed state,
which checkpoints hold); TotalNgramsOnDisk (transforms/spill.py; the embedded runner and
Flink's batch mode) spills sorted run files and merges each n-gram range with bounded
memory, writing the part files as it goes. Also the totals of each order (n-grams, matches, volumes) that the
manifest records.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.schemas import layout, ngrams_schema, order_of
from ngramflow.transforms import checked, columnar
from ngramflow.transforms.merge import SumRunTables, record_bytes
from ngramflow.transforms.sample_sort import CutIntoParts
from ngramflow.transforms.shards import SplitByShard
from ngramflow.transforms.sizing import range_bytes, range_sample_every


def keep_frequent(totals: pa.Table, min_count: int) -> pa.Table:
    """The threshold applies to the total over all kept years, never to single year rows
    (Google's own publication threshold works the same way)."""
    return totals if min_count <= 1 else totals.filter(pc.greater_equal(totals["match"], min_count))


def to_ngram_table(totals: pa.Table) -> pa.Table:
    """Rows of schemas.NGRAMS (or NGRAMS_WITH_YEARS) from merged totals."""
    keep_years = "year_series" in totals.column_names
    first, last, years = columnar.mask_stats(totals["years"])
    columns = [
        totals["ngram"],
        order_of(totals["ngram"]).cast(pa.int8()),
        totals["match"],
        totals["volume"],
        pa.array(first),
        pa.array(last),
        pa.array(years),
    ]
    if keep_years:
        columns.append(totals["year_series"])
    return pa.Table.from_arrays(columns, schema=ngrams_schema(keep_years))


class TotalNgrams(beam.PTransform):
    """Run tables -> (shard, n-gram table) with schemas.NGRAMS rows, each sorted by n-gram.

    Runs are split by a stable hash of the n-gram, so every n-gram's runs meet
    in one shard. On Flink a shard's group is one Java List (batch) or one
    RocksDB value (checkpointed): ``shards`` comes from sizing.merge_shards,
    which keeps each within the key budget at any input size.
    """

    def __init__(self, min_count: int, shards: int):
        super().__init__()
        self.min_count, self.shards = min_count, shards

    def expand(self, runs):
        min_count = self.min_count
        return (
            runs
            | "Shard runs by n-gram" >> SplitByShard("ngram", self.shards)
            # Grouped, then combined: a lifted CombinePerKey holds every key's partial table in the Python
            # worker until a bundle ends, and a bundle of Flink's batch mode is a worker's whole share of the
            # input (measured: 8M distinct 2-grams ran the TaskManager out of heap as those tables arrived).
            | "Gather each shard's runs" >> beam.GroupByKey()
            | "Sum runs per n-gram" >> beam.CombineValues(SumRunTables())
            | "Keep n-grams with enough matches" >> beam.MapTuple(
                lambda shard, t: (shard, to_ngram_table(keep_frequent(t, min_count))))
        )


class SortIntoRanges(beam.PTransform):
    """(shard, n-gram table) -> (range, n-gram table): the n-grams cut into contiguous ranges of about
    sizing.range_bytes each, sorted, so that each part file holds one range (as the spill path's do) and
    a look-up reads one file. ``shards``: the shard keys of the input, 0..shards-1."""

    def __init__(self, shards: int):
        super().__init__()
        self.shards = shards

    def expand(self, ngram_tables):
        return (
            ngram_tables
            | "Cut the n-gram order into ranges" >> CutIntoParts(
                "ngram", range_sample_every(), range_bytes(), lambda table: table.nbytes, self.shards)
            | "Gather each range" >> beam.GroupByKey()
            | "Sort each range" >> beam.MapTuple(lambda index, pieces: (index, sorted_range(pieces)))
        )


def sorted_range(pieces) -> pa.Table:
    """One range's pieces (from every shard; an n-gram is in one) as one table sorted by n-gram."""
    table = pa.concat_tables(list(pieces))
    record_bytes("range bytes", table.nbytes)
    return table.take(pc.sort_indices(table["ngram"])).combine_chunks()


def range_records(index: int, ngrams: pa.Table):
    """The record of each part file of one range, as the manifest's "ranges" keep it."""
    for name, rows in files_by_order(index, ngrams):
        yield {"order": rows["order"][0].as_py(), "file": f"{name}.parquet",
               "first": rows["ngram"][0].as_py(), "last": rows["ngram"][-1].as_py()}


_TOTALLED = ("match_count", "volume_count")
_WHOLE = np.zeros(1, np.int64)  # sum_runs' starts for one sum over all values


def order_totals(ngrams: pa.Table):
    """(order, (n-grams, match total, volume total)) of one table."""
    orders = columnar.numpy(ngrams["order"])
    for order in np.unique(orders).tolist():
        rows = orders == order
        totals = (checked.sum_runs(columnar.numpy(ngrams[column])[rows], _WHOLE,
                                   lambda _, column=column, order=order: f"the {column} of all {order}-grams")[0]
                  for column in _TOTALLED)
        yield order, (int(rows.sum()), *map(int, totals))


def order_record(order: int, totals: tuple) -> tuple:
    """(name, record) of one order's totals over all shards, summed exactly (Python ints), or CountOverflow."""
    ngrams, *sums = totals
    record = {"order": order, "ngrams": ngrams}
    for column, total in zip(_TOTALLED, sums):
        record[column] = checked.fits(total, f"the {column} of all {order}-grams")
    return f"order-{order}", record


def files_by_order(shard: int, ngrams: pa.Table):
    """(output name, rows) for each order present in one shard's table."""
    for order in pc.unique(ngrams["order"]).to_pylist():
        yield layout.part(layout.ngrams_folder(order), shard), ngrams.filter(pc.equal(ngrams["order"], order))


class SumOrderTotals(beam.PTransform):
    """(order, (n-grams, matches, volumes)) of parts of the data -> (name, record) per order."""

    def expand(self, order_totals):
        return (
            order_totals
            | "Sum per order" >> beam.CombinePerKey(beam.combiners.TupleCombineFn(sum, sum, sum))
            | "Order record" >> beam.MapTuple(order_record)
        )


class SummarizeOrders(beam.PTransform):
    """(shard, n-gram table) -> (name, record) per order: n-gram count and match/volume totals."""

    def expand(self, ngram_tables):
        return (
            ngram_tables
            | "Totals per order" >> beam.FlatMapTuple(lambda _shard, t: order_totals(t))
            | "Sum totals" >> SumOrderTotals()
        )
