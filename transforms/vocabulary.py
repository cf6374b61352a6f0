"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the order (descending unigram match count, then token UTF-8 bytes;
tokens without a kept unigram last), after the reserved ids of
schemas.RESERVED_TOKENS. A global sort in one worker would need the whole
vocabulary (millions of tokens for English) in memory, so ids are assigned by
ranges: every token gets a *range key* from its count (and, where the order
within a count is by bytes alone, its first two bytes) whose order is the id
order; the ranges' sizes give each range its first id, and each range is
sorted and numbered on its own.

First ids meet their ranges in a CoGroupByKey, not through a side input: Beam's
Flink runner (2.62) cannot checkpoint elements that wait for a side input, and
checkpointed Flink imports must snapshot at any moment.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import RESERVED_TOKENS, VOCABULARY
from transforms import columnar
from transforms.shards import SplitByShard, split_by_key

_TOKENS = pa.schema([("token", pa.string()), ("match_count", pa.int64()), ("volume_count", pa.int64())])
# Counts below EXACT_COUNTS get a range per count value, split by token prefix;
# larger counts share ranges of 1/16 of a power of two (few tokens have them).
_EXACT_COUNTS = 1024
_COUNT_CLASSES = _EXACT_COUNTS + 16 * 64


def tokens_of(ngrams: pa.Table) -> pa.Table:
    """The distinct tokens of n-gram rows, with counts from their unigram rows where present."""
    unigrams = ngrams.filter(pc.equal(ngrams["order"], 1))
    tokens = pc.unique(pc.list_flatten(pc.split_pattern(ngrams["ngram"], " ")))
    table = pa.concat_tables([
        pa.table([unigrams["ngram"], unigrams["match_count"], unigrams["volume_count"]], schema=_TOKENS),
        pa.table([tokens, pa.nulls(len(tokens), pa.int64()), pa.nulls(len(tokens), pa.int64())], schema=_TOKENS),
    ])
    return merge_tokens(table)


def merge_tokens(table: pa.Table) -> pa.Table:
    """One row per token; a token has at most one unigram row, so max() picks its counts."""
    merged = table.group_by("token").aggregate([("match_count", "max"), ("volume_count", "max")])
    return pa.table([merged["token"], merged["match_count_max"], merged["volume_count_max"]], schema=_TOKENS)


class MergeTokenTables(beam.CombineFn):
    def create_accumulator(self):
        return _TOKENS.empty_table()

    def add_input(self, accumulator, table):
        return merge_tokens(pa.concat_tables([accumulator, table]))

    def merge_accumulators(self, accumulators):
        return merge_tokens(pa.concat_tables(list(accumulators)))

    def extract_output(self, accumulator):
        return accumulator


def range_keys(tokens: pa.Table) -> np.ndarray:
    """An int64 per token, ordered as the ids are; equal keys form a range."""
    match = tokens["match_count"].combine_chunks()
    counted = columnar.numpy(pc.is_valid(match))
    count = np.maximum(columnar.numpy(match.fill_null(1)), 1)
    count_class = np.where(count < _EXACT_COUNTS, count,
                           _EXACT_COUNTS + np.floor(16 * np.log2(count)).astype(np.int64))
    prefix = np.where(~counted | (count < _EXACT_COUNTS), columnar.prefix16(tokens["token"]), 0)
    descending = np.where(counted, _COUNT_CLASSES - count_class, _COUNT_CLASSES + 1)
    return (descending.astype(np.int64) << 16) | prefix.astype(np.int64)


def split_by_range(tokens: pa.Table):
    yield from split_by_key(tokens, range_keys(tokens))


def first_ids(keyed_sizes, first_id: int):
    """(any key, all (range, size) pairs) -> (range, its first id) for every range."""
    _, sizes = keyed_sizes
    next_id = first_id
    for key, size in sorted(sizes):
        yield key, next_id
        next_id += size


def number_range(joined) -> pa.Table:
    """(range, {"first": [first id], "tokens": [tables]}) -> the range's vocabulary rows."""
    _, parts = joined
    (first,) = parts["first"]
    table = pa.concat_tables(list(parts["tokens"]))
    order = pc.sort_indices(pa.table({"count": pc.negate(table["match_count"]), "token": table["token"]}),
                            [("count", "ascending"), ("token", "ascending")])
    table = table.take(order)
    ids = pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    return pa.table([ids, table["token"], table["match_count"], table["volume_count"]], schema=VOCABULARY)


def _reserved(tokens: pa.Table, wanted: bool = True) -> pa.Table:
    mask = pc.is_in(tokens["token"], pa.array(RESERVED_TOKENS))
    return tokens.filter(mask if wanted else pc.invert(mask))


def reserved_rows(tokens: pa.Table) -> pa.Table:
    """The reserved tokens with their fixed ids, and their counts when the corpus has them."""
    seen = {r["token"]: r for r in _reserved(tokens).to_pylist()}
    rows = [{"id": i, "token": t, "match_count": seen.get(t, {}).get("match_count"),
             "volume_count": seen.get(t, {}).get("volume_count")} for i, t in enumerate(RESERVED_TOKENS)]
    return pa.Table.from_pylist(rows, schema=VOCABULARY)


class BuildVocabulary(beam.PTransform):
    """(shard, n-gram table) -> (name, vocabulary table) with schemas.VOCABULARY rows."""

    def __init__(self, shards: int):
        super().__init__()
        self.shards = shards

    def expand(self, ngram_tables):
        tokens = (
            ngram_tables
            | "Distinct tokens with unigram counts" >> beam.MapTuple(lambda _shard, t: tokens_of(t))
            | "Shard tokens" >> SplitByShard("token", self.shards)
            | "One row per token" >> beam.CombinePerKey(MergeTokenTables())
            | "Drop shard keys" >> beam.Values()
        )
        # The reserved rows exist even when the corpus lacks the tokens: an empty
        # table joins what was seen (CombineGlobally would need a side input).
        reserved = (
            (tokens | "Reserved tokens seen" >> beam.Map(_reserved),
             tokens.pipeline | "No reserved token" >> beam.Create([_TOKENS.empty_table()]))
            | "Reserved tokens" >> beam.Flatten()
            | "One key for reserved tokens" >> beam.Map(lambda t: (None, t))
            | "Merge reserved tokens" >> beam.CombinePerKey(MergeTokenTables())
            | "Reserved ids" >> beam.MapTuple(lambda _, t: ("part-reserved", reserved_rows(t)))
        )
        ranged = (
            tokens
            | "Corpus tokens" >> beam.Map(_reserved, wanted=False)
            | "Split tokens into id ranges" >> beam.FlatMap(split_by_range)
        )
        first = (
            ranged
            | "Range sizes" >> beam.MapTuple(lambda key, table: (key, table.num_rows))
            | "Sum range sizes" >> beam.CombinePerKey(sum)
            | "All range sizes" >> beam.Map(lambda size: (None, size))
            | "Gather range sizes" >> beam.GroupByKey()
            | "First id of each range" >> beam.FlatMap(first_ids, len(RESERVED_TOKENS))
        )
        ranked = (
            {"first": first, "tokens": ranged}
            | "Join ranges with their first ids" >> beam.CoGroupByKey()
            | "Number each range" >> beam.Map(lambda joined: (f"part-{joined[0]:012d}", number_range(joined)))
        )
        return (reserved, ranked) | "Vocabulary tables" >> beam.Flatten()
