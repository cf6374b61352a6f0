"""Cut tables spread over hash shards into parts that are contiguous ranges of one sort order, each of a
bounded size: a sample sort, for Flink's checkpointed mode, where every group is keyed state.

    (shard, table)                -> a sample: one row in ``every``, chosen by a hash of the key
                                     (independent of the shards'), with the weight it stands for
    every sample, in one group    -> splitters: the keys where the samples' running weight passes
                                     each multiple of ``part_weight`` (the group holds a 1/every
                                     share of the rows' keys, not the rows)
    (shard, table) + splitters    -> (part, piece): the shard's rows of each part; part p holds the
                                     keys from splitter p-1 (inclusive) to splitter p

The splitters reach the shards through a CoGroupByKey, not a side input: Beam's
Flink runner (2.62) cannot checkpoint elements that wait for a side input.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.transforms import columnar
from ngramflow.transforms.merge import record_bytes
from ngramflow.transforms.shards import split_by_key

_SALT = 0x5A3D1E  # a hash independent of the shards' picks the samples
_KEY, _WEIGHT = "key", "weight"


def sample(table: pa.Table, key: str, every: int, weight: float) -> pa.Table:
    """One row in ``every`` of ``table`` (by a hash of KEY): its key and ``weight`` (what one sampled row
    stands for)."""
    keys = table[key].combine_chunks()
    picked = columnar.shard_of(keys, every, salt=_SALT) == 0 if len(keys) else np.zeros(0, bool)
    chosen = keys.filter(pa.array(picked))
    return pa.table({_KEY: chosen, _WEIGHT: pa.array(np.full(len(chosen), weight, np.float64))})


def splitters(samples: list[pa.Table], part_weight: float) -> pa.Array | None:
    """The keys that start parts 1, 2, ... (part 0 starts with the first key), None without samples."""
    if not samples:
        return None
    table = pa.concat_tables(samples)
    table = table.take(pc.sort_indices(table[_KEY]))
    passed = np.floor(np.cumsum(columnar.numpy(table[_WEIGHT])) / part_weight).astype(np.int64)
    starts = np.flatnonzero(np.diff(passed, prepend=0) > 0)  # the sample where each multiple is passed
    return table[_KEY].combine_chunks().take(pa.array(starts))


def cut(table: pa.Table, key: str, cuts: pa.Array | None):
    """(part, its rows of ``table``) for the parts that ``cuts`` (splitters) make of KEY's order."""
    if table.num_rows == 0:
        return
    if cuts is None or len(cuts) == 0:
        yield 0, table
        return
    # Keys and splitters sorted together, a splitter before the key it equals: a row's part is the
    # number of splitters up to it.
    both = pa.table({_KEY: pa.concat_arrays([table[key].combine_chunks(), cuts.cast(table.schema.field(key).type)]),
                     "row": pa.array(np.concatenate([np.arange(table.num_rows), np.full(len(cuts), -1)]))})
    rows = columnar.numpy(both["row"].take(pc.sort_indices(both, [(_KEY, "ascending"), ("row", "ascending")])))
    parts = np.cumsum(rows < 0)
    part_of = np.empty(table.num_rows, np.int64)
    part_of[rows[rows >= 0]] = parts[rows >= 0]
    yield from split_by_key(table, part_of)


def _cut_joined(joined: dict, key: str, group_metric: str | None):
    """{"splitters": [splitters], "tables": [tables]} of one shard -> (part, piece)."""
    (cuts,) = joined["splitters"]
    group_bytes = 0
    for table in joined["tables"]:
        group_bytes += table.nbytes
        yield from cut(table, key, cuts)
    if group_metric:
        record_bytes(group_metric, group_bytes)


class CutIntoParts(beam.PTransform):
    """(shard, table) -> (part, piece): part p's pieces hold a contiguous range of ``key``'s order, after
    part p-1's, and weigh about ``part_weight`` together (each piece in its table's order).

    ``weigh(table)`` is what a table weighs (its rows, its bytes); every ``every``-th row is sampled.
    ``shards`` are the shard keys 0..shards-1 that the splitters are sent to; ``group_metric`` names the
    metric (merge.record_bytes) of the bytes of each shard's tables, if they are to be recorded.
    """

    def __init__(self, key: str, every: int, part_weight: float, weigh, shards: int, group_metric: str | None = None):
        super().__init__()
        self.key, self.every, self.part_weight, self.weigh, self.shards = key, every, part_weight, weigh, shards
        self.group_metric = group_metric

    def expand(self, tables):
        key, every, part_weight, weigh, shards = self.key, self.every, self.part_weight, self.weigh, self.shards
        group_metric = self.group_metric

        def sampled(table):
            return None, sample(table, key, every, weigh(table) / table.num_rows * every if table.num_rows else 0)

        def for_every_shard(samples):
            found = splitters(list(samples), part_weight)
            return [(shard, found) for shard in range(shards)]

        cuts = (
            tables
            | "Sample the order" >> beam.MapTuple(lambda _shard, table: sampled(table))
            | "Gather samples" >> beam.GroupByKey()
            | "Splitters, once per shard" >> beam.FlatMapTuple(lambda _, samples: for_every_shard(samples))
        )
        return (
            {"splitters": cuts, "tables": tables}
            | "Join tables with the splitters" >> beam.CoGroupByKey()
            | "Cut tables into parts" >> beam.FlatMapTuple(
                lambda _shard, joined: _cut_joined(joined, key, group_metric))
        )
