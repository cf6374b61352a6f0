"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the id order (descending unigram match count, then token UTF-8 bytes;
tokens without a kept unigram last), after the reserved ids of
schemas.RESERVED_TOKENS; ``with_rank`` gives each token a key whose byte order is
that order. The embedded runner and Flink's batch mode number tokens by an
external sort (transforms/vocabulary_sort.py). In Flink's checkpointed mode,
where every group is keyed state, BuildVocabulary numbers them by a sample sort,
each group bounded whatever the vocabulary's size:

1. tokens are merged per token shard (a hash of the token), and a share of
   1/sample_every() of them, chosen by another hash, is sampled;
2. the samples, gathered in one place (about SAMPLES_PER_PART per part), give the
   splitters: the ranks that start a part of about sizing.PART_TOKENS tokens;
3. each token shard cuts its tokens at the splitters, and the parts' sizes,
   gathered, give each part its first id;
4. each part is sorted and numbered on its own, and written as one file.

A plan of the whole id order (one entry per count and token prefix, gathered in
one group and copied to every token shard) once did steps 2-3: at 12 million
tokens its single group ran the TaskManager out of heap.

The splitters and the first ids reach the shards and the parts through a
CoGroupByKey, not a side input: Beam's Flink runner (2.62) cannot checkpoint
elements that wait for a side input, and checkpointed imports must snapshot at
any moment.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms import columnar
from ngramflow.transforms.merge import LogStructuredMerge
from ngramflow.transforms.shards import SplitByShard, split_by_key
from ngramflow.transforms.sizing import part_tokens, token_shards

TOKENS = pa.schema([("token", pa.string()), ("match_count", pa.int64()), ("volume_count", pa.int64())])
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


_RANK = "rank"  # the key of the id order: bytes whose order is the id order
#: Samples of the id order per part of the vocabulary: parts come out within a few tenths of sizing.PART_TOKENS.
SAMPLES_PER_PART = 64
_SAMPLE_SALT = 0x5A3D1E  # a hash independent of the token's shard picks the samples


def sample_every() -> int:
    """One token in this many is a sample."""
    return max(1, part_tokens() // SAMPLES_PER_PART)


def with_rank(tokens: pa.Table) -> pa.Table:
    """TOKENS with a first column whose byte order is the id order: a flag (0: counted), the count
    complemented to sort descending (big-endian), then the token's UTF-8 bytes."""
    match = tokens["match_count"].combine_chunks()
    counted = columnar.numpy(pc.is_valid(match))
    head = np.zeros((tokens.num_rows, 9), np.uint8)
    head[:, 0] = ~counted
    complement = np.where(counted, np.iinfo(np.int64).max - columnar.numpy(match.fill_null(0)), 0)
    head[:, 1:] = complement.astype(">u8").view(np.uint8).reshape(-1, 8)
    head = pa.FixedSizeBinaryArray.from_buffers(pa.binary(9), tokens.num_rows, [None, pa.py_buffer(head.tobytes())])
    rank = pc.binary_join_element_wise(head.cast(pa.binary()), tokens["token"].cast(pa.binary()), b"")
    return tokens.add_column(0, _RANK, rank)


def sort_by_rank(table: pa.Table) -> pa.Table:
    """Rows in id order (ranks are distinct: they hold the token)."""
    return table.take(pc.sort_indices(table[_RANK])).combine_chunks()


def sample_ranks(ranked: pa.Table) -> pa.Array:
    """The ranks of the sampled tokens among ``ranked`` (with_rank rows)."""
    if ranked.num_rows == 0:
        return pa.array([], pa.binary())
    sampled = columnar.shard_of(ranked["token"], sample_every(), salt=_SAMPLE_SALT) == 0
    return ranked[_RANK].combine_chunks().filter(pa.array(sampled))


def splitters(samples) -> pa.Array:
    """The ranks that start parts 1, 2, ... (part 0 starts with the first token): every
    SAMPLES_PER_PART-th of all samples in id order."""
    ranks = pa.concat_arrays([pa.array([], pa.binary()), *samples])
    ranks = ranks.take(pc.sort_indices(ranks))
    return ranks.take(pa.array(np.arange(SAMPLES_PER_PART, len(ranks), SAMPLES_PER_PART, dtype=np.int64)))


def splitters_for_shards(samples, shards: int):
    cuts = splitters(list(samples))
    for shard in range(shards):
        yield shard, cuts


def cut_into_parts(ranked: pa.Table, cuts: pa.Array):
    """(part, its rows of ``ranked``) for the parts that ``cuts`` (splitters) make of the id order."""
    if ranked.num_rows == 0:
        return
    # Tokens and splitters sorted together, a splitter before the token it equals: a token's part is the
    # number of splitters up to it.
    both = pa.table({_RANK: pa.concat_arrays([ranked[_RANK].combine_chunks(), cuts]),
                     "row": pa.array(np.concatenate([np.arange(ranked.num_rows), np.full(len(cuts), -1)]))})
    rows = columnar.numpy(both["row"].take(pc.sort_indices(both, [(_RANK, "ascending"), ("row", "ascending")])))
    parts = np.cumsum(rows < 0)
    part_of = np.empty(ranked.num_rows, np.int64)
    part_of[rows[rows >= 0]] = parts[rows >= 0]
    yield from split_by_key(ranked, part_of)


def cut_joined(joined: dict):
    """{"splitters": [splitters], "tokens": [ranked tables]} of one token shard -> (part, tokens)."""
    (cuts,) = joined["splitters"]
    for ranked in joined["tokens"]:
        yield from cut_into_parts(ranked, cuts)


def first_ids(sizes):
    """(part, rows) of every piece of every part -> (part, the id of its first token)."""
    total = {}
    for part, rows in sizes:
        total[part] = total.get(part, 0) + rows
    next_id = len(RESERVED_TOKENS)
    for part in sorted(total):
        yield part, next_id
        next_id += total[part]


def number_part(joined: dict) -> pa.Table:
    """{"first_id": [id], "tokens": [pieces]} of one part -> its tokens in id order, numbered."""
    (first,) = joined["first_id"]
    table = sort_by_rank(pa.concat_tables(joined["tokens"]))
    ids = pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
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
        corpus = tokens | "Corpus tokens in id order" >> beam.MapTuple(
            lambda shard, t: (shard, sort_by_rank(with_rank(reserved(t, wanted=False)))))
        cuts = (
            corpus
            | "Sample the id order" >> beam.MapTuple(lambda _shard, t: (None, sample_ranks(t)))
            | "Gather samples" >> beam.GroupByKey()
            | "Splitters, once per shard" >> beam.FlatMapTuple(lambda _, samples: splitters_for_shards(samples, shards))
        )
        parts = (
            {"splitters": cuts, "tokens": corpus}
            | "Join tokens with the splitters" >> beam.CoGroupByKey()
            | "Cut tokens into parts" >> beam.FlatMapTuple(lambda _shard, joined: cut_joined(joined))
        )
        starts = (
            parts
            | "Part sizes" >> beam.MapTuple(lambda part, t: (None, (part, t.num_rows)))
            | "Gather part sizes" >> beam.GroupByKey()
            | "First id of each part" >> beam.FlatMapTuple(lambda _, sizes: first_ids(sizes))
        )
        ranked = (
            {"first_id": starts, "tokens": parts}
            | "Join parts with their first ids" >> beam.CoGroupByKey()
            | "Number each part" >> beam.MapTuple(lambda part, joined: (f"part-{part:05d}", number_part(joined)))
        )
        return (reserved_ids, ranked) | "Vocabulary tables" >> beam.Flatten()
