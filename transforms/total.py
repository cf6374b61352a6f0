"""Total every n-gram across files and chunks, apply the minimum count, and turn totals into n-gram rows.

Two ways, with the same totals: TotalNgramRanges cuts run tables into sorted n-gram
ranges by a sample sort and sums each range's runs (Flink's checkpointed mode: the
tables and ranges live in keyed state, which checkpoints hold); TotalNgramsOnDisk
(transforms/spill.py; the embedded runner and Flink's batch mode) spills sorted run
files and merges each n-gram range with bounded memory, writing the part files as it
goes. Also the totals of each order (n-grams, matches, volumes) that the manifest
records.
"""

import random

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.schemas import NGRAMS, layout, ngrams_schema
from ngramflow.transforms import checked, columnar, native
from ngramflow.transforms.merge import merge_runs, overflowed, record_bytes
from ngramflow.transforms.sample_sort import CutIntoParts
from ngramflow.transforms.sizing import PIECES_PER_RANGE, range_bytes, range_sample_every


def keep_frequent(totals: pa.Table, min_count: int) -> pa.Table:
    """The threshold applies to the total over all kept years, never to single year rows
    (Google's own publication threshold works the same way)."""
    return totals if min_count <= 1 else totals.filter(pc.greater_equal(totals["match"], min_count))


def to_ngram_table(totals: pa.Table, order: int | None = None) -> pa.Table:
    """Rows of schemas.NGRAMS (or NGRAMS_WITH_YEARS) from merged totals, all of ORDER if it is given."""
    keep_years = "year_series" in totals.column_names
    first, last, years = columnar.mask_stats(totals["years"])
    if order is None:
        orders = native.orders(columnar.whole(totals["ngram"]))
    else:
        orders = np.full(totals.num_rows, order, np.int8)
    columns = [
        totals["ngram"],
        pa.array(orders),
        totals["match"],
        totals["volume"],
        pa.array(first),
        pa.array(last),
        pa.array(years),
    ]
    if keep_years:
        columns.append(totals["year_series"])
    return pa.Table.from_arrays(columns, schema=ngrams_schema(keep_years))


def ngram_tables(runs: pa.Table, min_count: int) -> list[pa.Table]:
    """Run tables -> one table of schemas.NGRAMS rows of at least MIN_COUNT matches per order present,
    ascending, each sorted by n-gram: what merge_runs, keep_frequent, to_ngram_table and by_order make of
    them, in one pass of the kernel over the merged rows (native.merge_ngrams), where those were a pass and a
    copy of every row each. Runs with year series take that way."""
    if "year_series" in runs.column_names:
        return [rows for _, rows in by_order(to_ngram_table(keep_frequent(merge_runs(runs), min_count)))]
    if not runs.num_rows:
        return []
    keys = columnar.whole(runs["ngram"])
    order, starts = native.merge_order(keys)
    found = native.merge_ngrams(keys, columnar.numpy(runs["match"]), columnar.numpy(runs["volume"]), runs["years"],
                                order, starts, min_count)
    if isinstance(found, tuple):
        overflowed(keys, order, starts, *found)
    return [pa.Table.from_arrays([ngrams, pa.array(np.full(len(ngrams), n, np.int8)), *map(pa.array, columns)],
                                 schema=NGRAMS)
            for n, ngrams, *columns in found]


class SpreadPieces(beam.DoFn):
    """Run table -> (key, piece): the table cut into pieces of consecutive rows of at most ``piece_bytes``,
    dealt to the keys 0..keys-1 in turn (from a random first key per worker), so that every key receives
    about the same bytes whatever the tables' sizes."""

    def __init__(self, keys: int, piece_bytes: int):
        self.keys, self.piece_bytes = keys, piece_bytes
        self.next_key = 0

    def setup(self):
        self.next_key = random.randrange(self.keys)

    def process(self, table: pa.Table):
        rows = max(1, table.num_rows * self.piece_bytes // max(1, table.nbytes))
        for start in range(0, table.num_rows, rows):
            yield self.next_key, table.slice(start, rows)  # a pickled slice carries its rows only (wire.py)
            self.next_key = (self.next_key + 1) % self.keys


class TotalNgramRanges(beam.PTransform):
    """Run tables -> (range, n-gram table): schemas.NGRAMS rows at or above the minimum count, one table per
    contiguous n-gram range of about sizing.range_bytes() of runs, sorted (Flink's checkpointed mode, where
    every group is keyed state: a checkpoint holds them).

    While the input is read, each run table waits under one of ``keys`` keys (sizing.merge_shards, within
    the key budget at any input size); at its end a sample sort (transforms/sample_sort.py) cuts every
    piece at the ranges' splitters, and each range sums its runs. A piece meets the ranges it spans: in
    Google's files, sorted and with each n-gram in one file, that is one or two, so pieces grow with the
    input. (A hash of the n-gram first, then the cut, split every table over every key and every key's
    totals over every range: keys x ranges pieces, which grew with the square of the input, and twice
    the input through keyed state; BENCHMARKS.md, "Flink at scale".)
    """

    def __init__(self, min_count: int, keys: int):
        super().__init__()
        self.min_count, self.keys = min_count, keys

    def expand(self, runs):
        min_count = self.min_count
        return (
            runs
            | "Spread runs over keys" >> beam.ParDo(SpreadPieces(self.keys, range_bytes() // PIECES_PER_RANGE))
            | "Cut the n-gram order into ranges" >> CutIntoParts(
                "ngram", range_sample_every(), range_bytes(), lambda table: table.nbytes, self.keys,
                group_metric="ngram input bytes")
            | "Gather each range" >> beam.GroupByKey()
            | "Total each range" >> beam.MapTuple(
                lambda index, pieces: (index, to_ngram_table(keep_frequent(total_range(pieces), min_count))))
        )


def total_range(pieces) -> pa.Table:
    """One range's pieces of runs (from every key) -> one row per n-gram, sorted by n-gram."""
    table = pa.concat_tables(list(pieces))
    record_bytes("range bytes", table.nbytes)
    return merge_runs(table)


def range_records(index: int, ngrams: pa.Table):
    """The record of each part file of one range, as the manifest's "ranges" keep it."""
    for name, rows in files_by_order(index, ngrams):
        yield {"order": rows["order"][0].as_py(), "file": f"{name}.parquet",
               "first": rows["ngram"][0].as_py(), "last": rows["ngram"][-1].as_py()}


_TOTALLED = ("match_count", "volume_count")
_WHOLE = np.zeros(1, np.int64)  # sum_runs' starts for one sum over all values


def order_totals(ngrams: pa.Table):
    """(order, (n-grams, match total, volume total)) of one table. A table of one order, as the writers hand
    over, is summed whole: np.unique sorted each table's orders to find that out (2.7 ms a table of 256K
    n-grams, against 0.2 ms)."""
    orders = columnar.numpy(ngrams["order"])
    if not len(orders):
        return
    one_order = orders.min() == orders.max()
    for order in [int(orders[0])] if one_order else np.unique(orders).tolist():
        rows = slice(None) if one_order else orders == order
        totals = (checked.sum_runs(columnar.numpy(ngrams[column])[rows], _WHOLE,
                                   lambda _, column=column, order=order: f"the {column} of all {order}-grams")[0]
                  for column in _TOTALLED)
        yield order, (len(orders) if one_order else int(rows.sum()), *map(int, totals))


def order_record(order: int, totals: tuple) -> tuple:
    """(name, record) of one order's totals over all shards, summed exactly (Python ints), or CountOverflow."""
    ngrams, *sums = totals
    record = {"order": order, "ngrams": ngrams}
    for column, total in zip(_TOTALLED, sums):
        record[column] = checked.fits(total, f"the {column} of all {order}-grams")
    return f"order-{order}", record


def by_order(ngrams: pa.Table, orders: np.ndarray | None = None):
    """(order, rows) for each order present in a table (``orders``: of each row, else its "order" column),
    each order's rows in the table's order: a stable sort by order (one copy of the rows, where a filter per
    order copied them once per order)."""
    orders = columnar.numpy(ngrams["order"]) if orders is None else orders
    counts = np.bincount(orders)
    present = np.flatnonzero(counts).tolist()
    counts = counts.tolist()
    if len(present) > 1:
        ngrams = ngrams.take(np.argsort(orders, kind="stable"))
    start = 0
    for order in present:
        yield order, ngrams.slice(start, counts[order])
        start += counts[order]


def files_by_order(shard: int, ngrams: pa.Table):
    """(output name, rows) for each order present in one shard's table (by_order)."""
    for order, rows in by_order(ngrams):
        yield part_name(order, shard), rows


def part_name(order: int, shard: int) -> str:
    """The output name of a shard's part file of ORDER's n-grams."""
    return layout.part(layout.ngrams_folder(order), shard)


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
