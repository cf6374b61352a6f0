"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the order (descending unigram match count, then token UTF-8 bytes;
tokens without a kept unigram last), after the reserved ids of
schemas.RESERVED_TOKENS. A global sort in one worker would need the whole
vocabulary (millions of tokens for English) in memory, so ids are assigned in
parts instead:

1. every token gets a *range key* from its count (and, where the order within
   a count is by bytes alone, its first two bytes) whose order is the id order;
2. one compact histogram of range keys, built in one place, gives each key its
   first id and cuts the key space into parts of about PART_TOKENS tokens;
3. each part is sorted and numbered on its own, and written as one file.

The plan from step 2 reaches the token shards through a CoGroupByKey, not a
side input: Beam's Flink runner (2.62) cannot checkpoint elements that wait for
a side input, and checkpointed Flink imports must snapshot at any moment.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms import columnar
from ngramflow.transforms.merge import LogStructuredMerge
from ngramflow.transforms.shards import SplitByShard, split_by_key
from ngramflow.transforms.sizing import PART_TOKENS, token_shards

TOKENS = pa.schema([("token", pa.string()), ("match_count", pa.int64()), ("volume_count", pa.int64())])
# Counts below EXACT_COUNTS get a range per count value, split by token prefix;
# larger counts share ranges of 1/16 of a power of two (few tokens have them).
_EXACT_COUNTS = 1024
_COUNT_CLASSES = _EXACT_COUNTS + 16 * 64


def distinct_tokens(ngrams: pa.Table) -> pa.Table:
    """The distinct tokens of n-gram rows, with counts from their unigram rows where present."""
    unigrams = ngrams.filter(pc.equal(ngrams["order"], 1))
    tokens = pc.unique(pc.list_flatten(pc.split_pattern(ngrams["ngram"], " ")))
    table = pa.concat_tables([
        pa.table([unigrams["ngram"], unigrams["match_count"], unigrams["volume_count"]], schema=TOKENS),
        pa.table([tokens, pa.nulls(len(tokens), pa.int64()), pa.nulls(len(tokens), pa.int64())], schema=TOKENS),
    ])
    return merge_tokens(table)


def merge_tokens(table: pa.Table) -> pa.Table:
    """One row per token, sorted by token; a token has at most one unigram row, whose counts it keeps.

    A sort, not a hash aggregation: Arrow's group_by reserves buffers of gigabytes for
    a few million tokens (BENCHMARKS.md, "Scale"), and sorted tokens are what a run file holds.
    """
    if table.num_rows == 0:
        return table.cast(TOKENS)
    # Per token, its counted row (if any) sorts first.
    table = table.take(pc.sort_indices(table, [("token", "ascending"), ("match_count", "descending")],
                                       null_placement="at_end"))
    starts = columnar.run_starts(table["token"].combine_chunks())
    return table.take(pa.array(starts)).cast(TOKENS).combine_chunks()


class MergeTokenTables(LogStructuredMerge):
    """Token tables of one token shard -> one row per token."""

    KIND = "token"
    merge = staticmethod(merge_tokens)


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


def histogram(tokens: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(range_keys(tokens), return_counts=True)


def plan_parts(histograms, first_id: int, part_tokens: int = PART_TOKENS) -> dict:
    """Per range key (sorted): its first id and the part that numbers it."""
    keys = np.concatenate([h[0] for h in histograms] or [np.zeros(0, np.int64)])
    counts = np.concatenate([h[1] for h in histograms] or [np.zeros(0, np.int64)])
    keys, inverse = np.unique(keys, return_inverse=True)
    sizes = np.bincount(inverse, weights=counts, minlength=len(keys)).astype(np.int64)
    before = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return {"keys": keys, "first_id": first_id + before, "part": before // part_tokens}


def plan_for_shards(histograms, shards: int):
    plan = plan_parts(list(histograms), len(RESERVED_TOKENS))
    for shard in range(shards):
        yield shard, plan


def split_joined(joined: dict):
    """{"plan": [plan], "tokens": [tables]} of one token shard -> (part, tokens) of each table."""
    (plan,) = joined["plan"]
    for tokens in joined["tokens"]:
        yield from split_by_part(tokens, plan)


def split_by_part(tokens: pa.Table, plan: dict):
    """Tokens -> (part, the part's tokens with their range key and its first id)."""
    keys = range_keys(tokens)
    at = np.searchsorted(plan["keys"], keys)
    table = tokens.append_column("range_key", pa.array(keys)).append_column("first_id", pa.array(plan["first_id"][at]))
    yield from split_by_key(table, plan["part"][at])


def number_part(tables) -> pa.Table:
    """Sort a part by (range key, count descending, token bytes) and give each token its id."""
    table = pa.concat_tables(list(tables))
    table = table.take(pc.sort_indices(
        pa.table({"range": table["range_key"], "count": pc.negate(table["match_count"]), "token": table["token"]}),
        [("range", "ascending"), ("count", "ascending"), ("token", "ascending")]))
    starts = columnar.run_starts(table["range_key"].combine_chunks())
    rank = np.arange(table.num_rows) - starts[columnar.run_ids(starts, table.num_rows)]
    ids = pa.array(columnar.numpy(table["first_id"]) + rank)
    return pa.table([ids, table["token"], table["match_count"], table["volume_count"]], schema=VOCABULARY)


def reserved(tokens: pa.Table, wanted: bool = True) -> pa.Table:
    mask = pc.is_in(tokens["token"], pa.array(RESERVED_TOKENS))
    return tokens.filter(mask if wanted else pc.invert(mask))


def reserved_rows(tokens: pa.Table) -> pa.Table:
    """The reserved tokens with their fixed ids, and their counts when the corpus has them."""
    seen = {r["token"]: r for r in reserved(tokens).to_pylist()}
    rows = [{"id": i, "token": t, "match_count": seen.get(t, {}).get("match_count"),
             "volume_count": seen.get(t, {}).get("volume_count")} for i, t in enumerate(RESERVED_TOKENS)]
    return pa.Table.from_pylist(rows, schema=VOCABULARY)


class BuildVocabulary(beam.PTransform):
    """(shard, n-gram table) -> (name, vocabulary table) with schemas.VOCABULARY rows."""

    def __init__(self, shards: int):
        super().__init__()
        self.shards = token_shards(shards)

    def expand(self, ngram_tables):
        shards = self.shards
        tokens = (
            ngram_tables
            | "Distinct tokens with unigram counts" >> beam.MapTuple(lambda _shard, t: distinct_tokens(t))
            | "Shard tokens" >> SplitByShard("token", shards)
            | "One row per token" >> beam.CombinePerKey(MergeTokenTables())
        )
        # The reserved rows exist even when the corpus lacks the tokens: an empty
        # table joins what was seen (CombineGlobally would need a side input).
        reserved_ids = (
            (tokens | "Reserved tokens seen" >> beam.Map(lambda kv: (None, reserved(kv[1]))),
             tokens.pipeline | "No reserved token" >> beam.Create([(None, TOKENS.empty_table())]))
            | "Reserved tokens" >> beam.Flatten()
            | "Merge reserved tokens" >> beam.CombinePerKey(MergeTokenTables())
            | "Reserved ids" >> beam.MapTuple(lambda _, t: ("part-reserved", reserved_rows(t)))
        )
        corpus = tokens | "Corpus tokens" >> beam.MapTuple(lambda shard, t: (shard, reserved(t, wanted=False)))
        # Each token shard gets a copy of the plan by a join: a side input would be one per worker, but
        # Beam's portable Flink runner fails on one in a checkpointed job (ClassCastException).
        plan = (
            corpus
            | "Range key histogram" >> beam.MapTuple(lambda _shard, t: (None, histogram(t)))
            | "Gather histograms" >> beam.GroupByKey()
            | "Plan parts, once per shard" >> beam.FlatMapTuple(lambda _, hists: plan_for_shards(hists, shards))
        )
        ranked = (
            {"plan": plan, "tokens": corpus}
            | "Join tokens with the plan" >> beam.CoGroupByKey()
            | "Split tokens by part" >> beam.FlatMapTuple(lambda _shard, joined: split_joined(joined))
            | "Group parts" >> beam.GroupByKey()
            | "Number each part" >> beam.MapTuple(lambda part, tables: (f"part-{part:05d}", number_part(tables)))
        )
        return (reserved_ids, ranked) | "Vocabulary tables" >> beam.Flatten()
