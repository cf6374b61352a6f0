"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the order (descending unigram match count, then token UTF-8 bytes;
tokens without a kept unigram last), after the reserved ids of
schemas.RESERVED_TOKENS. A global sort in one worker would need the whole
vocabulary (millions of tokens for English) in memory, so ids are assigned by
ranges instead:

1. tokens are keyed by a 10-byte *rank key* (the count part of the order plus
   the first two bytes of the token) whose byte order is the id order;
2. one compact histogram of rank keys gives every key's first id and cuts the
   key space into ranges of about RANGE_TOKENS tokens;
3. each range is sorted and numbered on its own.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import RESERVED_TOKENS, VOCABULARY
from transforms import columnar
from transforms.shards import SplitByShard, split_by_key

#: Tokens numbered together in one worker (bounded memory per range).
RANGE_TOKENS = 1 << 20
_TOKENS = pa.schema([("token", pa.string()), ("match_count", pa.int64()), ("volume_count", pa.int64())])
_UNCOUNTED = np.uint64(2**64 - 1)


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


def rank_keys(tokens: pa.Table) -> np.ndarray:
    """The 10-byte rank key of each token, as a NumPy 'S10' array (byte order = id order)."""
    match = tokens["match_count"].combine_chunks()
    counted = columnar.numpy(pc.is_valid(match))
    keys = np.zeros(len(tokens), dtype=[("count", ">u8"), ("prefix", ">u2")])
    keys["count"] = np.where(counted, np.uint64(2**63) - columnar.numpy(match.fill_null(0)).astype(np.uint64),
                             _UNCOUNTED)
    keys["prefix"] = columnar.prefix16(tokens["token"])
    return keys.view("S10")


def histogram(tokens: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(rank_keys(tokens), return_counts=True)


def merge_histograms(histograms) -> tuple[np.ndarray, np.ndarray]:
    histograms = list(histograms)
    if not histograms:
        return np.zeros(0, "S10"), np.zeros(0, np.int64)
    keys = np.concatenate([h[0] for h in histograms])
    counts = np.concatenate([h[1] for h in histograms])
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def plan_ranges(hist, first_id: int, range_tokens: int = RANGE_TOKENS) -> dict:
    """Per rank key (sorted): its first id and the range that numbers it."""
    keys, counts = hist
    before = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return {"keys": keys, "first_id": first_id + before, "range": before // range_tokens}


def split_by_range(tokens: pa.Table, plan: dict):
    """(range, tokens of that range with their rank key and the first id of that key)."""
    keys = rank_keys(tokens)
    at = np.searchsorted(plan["keys"], keys)
    rank_key = pa.FixedSizeBinaryArray.from_buffers(pa.binary(10), len(keys), [None, pa.py_buffer(keys.tobytes())])
    table = tokens.append_column("first_id", pa.array(plan["first_id"][at])).append_column("rank_key", rank_key)
    yield from split_by_key(table, plan["range"][at])


def number_range(tables) -> pa.Table:
    """Sort one range by (rank key, token bytes) and give each token its id."""
    table = pa.concat_tables(list(tables))
    table = table.take(pc.sort_indices(table, [("rank_key", "ascending"), ("token", "ascending")]))
    starts = columnar.run_starts(table["rank_key"].combine_chunks())
    position = np.arange(table.num_rows)
    offset = position - starts[columnar.run_ids(starts, table.num_rows)]
    ids = columnar.numpy(table["first_id"]) + offset
    return pa.table([pa.array(ids), table["token"], table["match_count"], table["volume_count"]], schema=VOCABULARY)


def reserved_rows(tokens: pa.Table) -> pa.Table:
    """The reserved tokens with their fixed ids, and their counts when the corpus has them."""
    seen = {r["token"]: r for r in tokens.filter(pc.is_in(tokens["token"], pa.array(RESERVED_TOKENS))).to_pylist()}
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
        reserved = (
            tokens
            | "Reserved tokens seen" >> beam.Map(
                lambda t: t.filter(pc.is_in(t["token"], pa.array(RESERVED_TOKENS))))
            | "All reserved tokens" >> beam.CombineGlobally(MergeTokenTables())
            | "Reserved ids" >> beam.Map(lambda t: ("part-reserved", reserved_rows(t)))
        )
        corpus_tokens = tokens | "Corpus tokens" >> beam.Map(
            lambda t: t.filter(pc.invert(pc.is_in(t["token"], pa.array(RESERVED_TOKENS)))))
        plan = (
            corpus_tokens
            | "Rank key histogram" >> beam.Map(histogram)
            | "Whole histogram" >> beam.combiners.ToList()
            | "Plan id ranges" >> beam.Map(lambda hists: plan_ranges(merge_histograms(hists), len(RESERVED_TOKENS)))
        )
        ranked = (
            corpus_tokens
            | "Split tokens by id range" >> beam.FlatMap(split_by_range, plan=beam.pvalue.AsSingleton(plan))
            | "Group ranges" >> beam.GroupByKey()
            | "Number each range" >> beam.MapTuple(lambda r, tables: (f"part-{r:05d}", number_range(tables)))
        )
        return (reserved, ranked) | "Vocabulary tables" >> beam.Flatten()
