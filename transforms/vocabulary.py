"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the id order (descending unigram match count, then token UTF-8 bytes;
tokens without a kept unigram last), after the reserved ids of
schemas.RESERVED_TOKENS; ``with_rank`` gives each token a key whose byte order is
that order. The embedded runner and Flink's batch mode number tokens by an
external sort (transforms/vocabulary_sort.py). In Flink's checkpointed mode,
where every group is keyed state, BuildVocabulary numbers them by a sample sort,
each group bounded whatever the vocabulary's size:

1. tokens are merged per token shard (a hash of the token);
2. the shards' tokens are cut into parts of at most about sizing.PART_TOKENS
   tokens and sizing.range_bytes() bytes, each a contiguous range of the id order
   (transforms/sample_sort.py);
3. the parts' sizes, gathered, give each part its first id;
4. each part is sorted and numbered on its own, and written as one file.

A plan of the whole id order (one entry per count and token prefix, gathered in
one group and copied to every token shard) once did steps 2-3: at 12 million
tokens its single group ran the TaskManager out of heap.

The first ids reach the parts through a CoGroupByKey, not a side input: Beam's
Flink runner (2.62) cannot checkpoint elements that wait for a side input, and
checkpointed imports must snapshot at any moment.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms import columnar, native
from ngramflow.transforms.merge import LogStructuredMerge, record_bytes
from ngramflow.transforms.runfiles import AscendingRuns, RunFile, RunSpiller, write_run_file
from ngramflow.transforms.sample_sort import CutIntoParts
from ngramflow.transforms.shards import SplitByShard
from ngramflow.transforms.sizing import (RECENT_TOKENS_BYTES, TOKEN_SPILL_COMPRESSION, part_tokens, range_bytes,
                                         range_sample_every, token_shards)

TOKENS = pa.schema([("token", pa.string()), ("match_count", pa.int64()), ("volume_count", pa.int64())])
_NO_TOKENS = TOKENS.empty_table()
#: The kinds of TokenRuns' run files: with_rank's rank (which holds the token and its count) and the volume
#: count, in id order (RANKED); TOKENS rows of the reserved tokens among the unigram rows (RESERVED), of the
#: tokens of tables with longer n-grams (TOKEN_ROWS), of the tables of unigrams alone (UNIGRAMS), each sorted by
#: token; and records of the n-gram files that hold tables of unigrams alone not written so (UNIGRAM_FILE: the
#: record's path is the file's), whose rows the vocabulary's merge pass writes as UNIGRAMS runs when it needs
#: them.
RANKED, RESERVED, TOKEN_ROWS, UNIGRAMS, UNIGRAM_FILE = "ranked", "reserved", "tokens", "unigrams", "unigram-file"


def distinct_tokens(ngrams: pa.Table, unigrams: bool = False, recent: native.RecentTokens | None = None) -> pa.Table:
    """The distinct tokens of n-gram rows (one per n-gram), sorted by token, with counts from their unigram
    rows where present. UNIGRAMS: the rows are distinct unigrams in byte order (a sorted file's 1-grams),
    which are their own tokens: no pass over them (2.3M unigrams: 0.1-0.16 s of CPU). RECENT: tokens given
    before (native.distinct_tokens), left out but for unigrams' rows."""
    if unigrams:
        return pa.table([ngrams["ngram"], ngrams["match_count"], ngrams["volume_count"]], schema=TOKENS)
    tokens, rows = native.distinct_tokens(ngrams["ngram"], recent)
    row = pa.array(rows, mask=rows < 0)  # each token's unigram row, or null
    within = int(rows.max(initial=-1)) + 1  # the rows that hold them
    counts = (columnar.leading(ngrams[column], within).take(row) for column in ("match_count", "volume_count"))
    return pa.table([tokens, *counts], schema=TOKENS)


def merge_tokens(table: pa.Table) -> pa.Table:
    """One row per token, sorted by token; a token has at most one unigram row, whose counts it keeps.

    A sort, not a hash aggregation: Arrow's group_by reserves buffers of gigabytes for
    a few million tokens (BENCHMARKS.md, "Scale"), and sorted tokens are what a run file holds.
    The tables merged are sorted pieces (of token run files, or of ranges), which native.merge_order
    merges; a token keeps the counts of its counted row, the one of largest match count (nulls as -1),
    gathered with it in one pass (native.merge_tokens).
    """
    if table.num_rows == 0:
        return table.cast(TOKENS)
    tokens = columnar.whole(table["token"])
    order, starts = native.merge_order(tokens)
    if order is None and len(starts) == table.num_rows:
        return table.cast(TOKENS).combine_chunks()
    tokens, matches, volumes = native.merge_tokens(tokens, _counts(table), _counts(table, "volume_count"), order,
                                                   starts)
    return pa.table([tokens, _with_nulls(matches), _with_nulls(volumes)], schema=TOKENS)


def uncounted_tokens(table: pa.Table) -> pa.Table:
    """Token rows in pieces each sorted by token -> one row for each token none of whose rows has a count, in
    token order (TOKENS, counts null): the last merge of the vocabulary's token pass, which needs no more
    (vocabulary_sort.rank_token_range). Where merge_tokens gathered every token with its counts, of which the
    pass then kept the uncounted, only whether each group holds a counted row is found."""
    if table["match_count"].null_count == 0:
        return _NO_TOKENS
    tokens = columnar.whole(table["token"])
    order, starts = native.merge_order(tokens)
    counted = columnar.numpy(pc.is_valid(table["match_count"]))
    counted_groups = np.logical_or.reduceat(counted if order is None else counted[order], starts)
    rows = starts[~counted_groups]
    rows = rows if order is None else order[rows]
    nulls = pa.nulls(len(rows), pa.int64())
    return pa.table([tokens.take(rows), nulls, nulls], schema=TOKENS)


class TokenRuns:
    """The n-gram tables one worker writes -> run files of their tokens, within about BUDGET bytes: every token
    with a unigram row ranked already, and what the vocabulary's merge pass (vocabulary_sort.py) needs to find
    the tokens without one.

    A token has a count when it has a unigram row, and a unigram row is in one table of the import. So every
    unigram row is ranked here, as it comes: unigram tables are held while each follows the one before in
    token order, and such a sequence is put in id order (rank_tokens_in_order) where one does not follow, or
    where the buffer is full; the buffer of ranked sequences, merged, spills as "ranked" run files, the
    reserved tokens apart in "reserved" ones. (Spilled at each sequence's end, the 2012 export's letter files
    of 1-grams, a sequence each, made 31 ranked run files of 12M tokens, merged again by the numbering.)
    The merge pass once put every token in token order and ranked it after the read stage: for 1-grams alone
    (the 2020 shards of 80M rows, 9.8M tokens) a stage of its own that read, merged and ranked them all again.

    What the merge pass still needs, and only for tokens of longer n-grams: which of them have a unigram row.
    A table of unigrams alone (a file of 1-grams in the input's order, or a range of 1-grams only) is its own
    tokens, with their counts, sorted, and no other table of the import holds them. Once the worker has had a
    table of longer n-grams, the merge pass will need them: they are written as they come ("unigrams",
    AscendingRuns). Before that, they may never be needed (an import of 1-grams alone), and only the n-gram
    file the caller writes them to is named (a UNIGRAM_FILE record), which the merge pass reads only when
    there are tokens of longer n-grams (vocabulary_sort.unigram_runs): written as they came, those rows were
    most of what an import of 1-grams alone wrote and never read (the 2020 shards of 80M rows: 241 of 546 MB
    of token runs), and read back from every file of 1-grams, they cost an import of 1- to 3-grams in the
    input's order 0.08 s more at the merge pass. A table of several orders (a piece of a range's merge) gives its
    unigrams with the tokens of its longer n-grams ("tokens", distinct_tokens), which often hold them: a token
    is given once. The tokens of longer n-grams repeat from table to table (a table of 177K 2-grams over 65K
    tokens has 61K of them, every table again), so the worker remembers the tokens it gave lately
    (native.RecentTokens, RECENT_TOKENS_BYTES of the budget, at most half) and leaves them out of its later
    tables' tokens. The cache is made at the first table of longer n-grams: a worker of 1-grams alone needs
    none. What the cache forgets is given again and folded by the merges; it lives as long as the runs it
    stands for (a bundle's), so a retried bundle gives its tokens again.

    The ranked buffer and the tokens' buffer (RunSpiller each) share the rest of the budget: where together
    they pass it, the larger is spilled. The ranked buffer takes half of it at most: its ranking holds about
    three times its bytes more (the 2020 shards of 80M rows: with the whole budget, a peak RSS of 466-472 MiB;
    with half, 371-421 MiB, as fast)."""

    def __init__(self, folder: str, budget: int):
        self.folder, self.budget = folder, budget
        self.spiller = RunSpiller(folder, TOKEN_ROWS, merge_tokens, budget, TOKEN_SPILL_COMPRESSION)
        self.ranked = RunSpiller(folder, RANKED, ranks_in_order, budget // 2, TOKEN_SPILL_COMPRESSION)
        self.unigrams = AscendingRuns(folder, UNIGRAMS, budget, TOKEN_SPILL_COMPRESSION)
        self.unigram_files = {}  # {path: (first, last, rows)} of the tables of unigrams alone written there
        self.sequence, self.sequence_bytes = [], 0  # unigram tables in token order, not yet ranked
        self.reserved = []
        self.recent = None

    def add(self, tables: list[pa.Table], unigram_file: str) -> list[RunFile]:
        """The tokens of n-gram tables of one order each (NGRAMS rows, in n-gram order) taken in, the unigram
        rows among them written to the n-gram file UNIGRAM_FILE (its path); the run files this filled."""
        tables = [table for table in tables if table.num_rows]
        unigrams = [table for table in tables if table["order"][0].as_py() == 1]
        runs = []
        alone = len(tables) == 1
        named = alone and self.recent is None  # no longer n-gram yet: the file named, the rows not written
        for table in unigrams:
            if named:
                self._named(unigram_file, table["ngram"])
            runs += self._rank(distinct_tokens(table, unigrams=True), written=alone and not named)
        if len(tables) > len(unigrams):
            if self.recent is None:
                cache = min(RECENT_TOKENS_BYTES, self.budget // 2)
                self.recent = native.RecentTokens(cache)
                self.spiller.budget = self.budget - cache  # the cache's room
                self.ranked.budget = self.spiller.budget // 2
            runs += self.spiller.add(distinct_tokens(pa.concat_tables(tables), recent=self.recent))
        ranked = self.sequence_bytes + self.ranked.buffered
        if ranked >= self.ranked.budget or ranked + self.spiller.buffered > self.spiller.budget:
            runs += self._spill_ranked() if ranked >= self.spiller.buffered else self.spiller.flush()
        return runs

    def _named(self, path: str, unigrams: pa.ChunkedArray) -> None:
        """A table of unigrams alone, of these n-grams (sorted), is in the n-gram file PATH."""
        first, last, rows = self.unigram_files.get(path, (unigrams[0].as_py(), None, 0))
        self.unigram_files[path] = (first, unigrams[-1].as_py(), rows + len(unigrams))

    def _rank(self, tokens: pa.Table, written: bool) -> list[RunFile]:
        """Unigram rows as TOKENS (sorted, distinct) into the sequence, which is ranked first when they do not
        follow it, and WRITTEN whole to the unigram runs."""
        found, others = split_reserved(tokens)
        if found.num_rows:
            self.reserved.append(found)
        runs = self.unigrams.add(others) if written else []
        if not others.num_rows:
            return runs
        if self.sequence and not others["token"][0].as_py() > self.sequence[-1]["token"][-1].as_py():
            runs += self._end_sequence()
        self.sequence.append(others)
        self.sequence_bytes += others.nbytes
        return runs

    def _end_sequence(self) -> list[RunFile]:
        """The sequence put in id order, into the ranked buffer."""
        if not self.sequence:
            return []
        sequence, self.sequence, self.sequence_bytes = self.sequence, [], 0
        return self.ranked.add(rank_tokens_in_order(pa.concat_tables(sequence)))

    def _spill_ranked(self, at_once: int = 1) -> list[RunFile]:
        return self._end_sequence() + self.ranked.flush(at_once)

    def flush(self, at_once: int = 1) -> list[RunFile]:
        """The run files of the tokens still held, and the records of the n-gram files of unigrams alone; the
        buffers merged in AT_ONCE parts at once (RunSpiller.flush)."""
        runs = self._spill_ranked(at_once) + self.spiller.flush(at_once) + self.unigrams.flush()
        runs += [RunFile(path, rows, ((first, last, rows),), UNIGRAM_FILE)
                 for path, (first, last, rows) in self.unigram_files.items()]
        self.unigram_files = {}
        reserved = merge_tokens(pa.concat_tables([_NO_TOKENS, *self.reserved]))
        reserved = write_run_file(self.folder, RESERVED, [reserved], self.budget, TOKEN_SPILL_COMPRESSION)
        self.reserved = []
        return runs + ([] if reserved is None else [reserved])


class MergeTokenTables(LogStructuredMerge):
    """Token tables of one token shard -> one row per token."""

    KIND = "token"
    merge = staticmethod(merge_tokens)


_RANK = "rank"  # the key of the id order: bytes whose order is the id order


def _counts(tokens: pa.Table, column: str = "match_count") -> np.ndarray:
    """Each token's unigram match count (or COLUMN's count), -1 where it has none: what its rank puts before
    its bytes (native.rank_keys), and what native.merge_tokens folds. One copy of the chunks, each filled where
    it has nulls: filled whole, they were copied twice."""
    chunks = [columnar.numpy(chunk.fill_null(-1) if chunk.null_count else chunk) for chunk in tokens[column].chunks]
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


def _with_nulls(counts: np.ndarray) -> pa.Array:
    """Counts of _counts' kind (-1: none) as a column, nulls where they are -1; without a copy where none is (a
    unigram row's: 4M counts took 5.1 ms copied with a mask, 1.0 ms looked at)."""
    if not len(counts) or counts.min() >= 0:
        return pa.array(counts)
    return pa.array(counts, mask=counts < 0)


def with_rank(tokens: pa.Table) -> pa.Table:
    """TOKENS with a first column whose byte order is the id order: the count complemented to sort descending
    (big-endian, all ones without a count: last), then the token's UTF-8 bytes (native.rank_keys)."""
    return tokens.add_column(0, _RANK, native.rank_keys(columnar.whole(tokens["token"]), _counts(tokens)))


def rank_tokens_in_order(tokens: pa.Table) -> pa.Table:
    """TOKENS rows sorted by token (chunks ascending one after another) -> their RANKED rows (with_rank's rank,
    which holds the token and its count, and the volume count), in id order: a stable radix sort of the counts
    alone (counted first, count descending) keeps the token order within equal counts, which is the rank's
    tie-break (native.rank_in_order, which writes each rank where the order puts it: the ranks made in token
    order and then taken in order by Arrow cost 0.55 s of CPU for 9.8M tokens; the counts, taken by NumPy in
    that order afterwards, 9 ns a token more)."""
    volumes, ranks = native.rank_in_order(tokens["token"], _counts(tokens), _counts(tokens, "volume_count"))
    return pa.table([ranks, _with_nulls(volumes)], names=[_RANK, "volume_count"])


def sort_by_rank(table: pa.Table) -> pa.Table:
    """Rows of with_rank in id order, every column kept (ranks are distinct: they hold the token): a part of
    the sample sort (number_part). native.rows_in_order merges pieces each in id order and sorts others; the
    external sort's merges gather natively (ranks_in_order)."""
    order = native.rows_in_order(columnar.whole(table[_RANK]))
    return (table if order is None else table.take(order)).combine_chunks()


def ranks_in_order(table: pa.Table) -> pa.Table:
    """RANKED rows in pieces each in id order (ranked run files', ranked buffers') -> the same rows in id order:
    sort_by_rank's merge, the rows gathered natively (native.take_keys), where Arrow concatenated the pieces and
    then took the rows from the copy. Rows in order already (a ranked buffer of one sequence, as most are) are
    given as they are: their copy was a third of a spill of 600K ranked rows (10 -> 6.5 ms)."""
    ranks, order = _merge_order(table)
    return pa.table([ranks if order is None else native.take_keys(ranks, order, 0, pa.binary()),
                     _volumes(table, order)], names=[_RANK, "volume_count"])


def tokens_by_rank(table: pa.Table) -> pa.Table:
    """RANKED rows in pieces each in id order (of ranked run files) -> TOKENS rows in id order: ranks_in_order's
    merge, each token cut from its rank and its count read back from it as it is taken (a ranked run holds
    no count of its own: 8 of the 38 bytes a token of the 2020 1-grams' ranked runs were the count again)."""
    ranks, order = _merge_order(table)
    tokens, matches = native.tokens_of_ranks(ranks, order)
    return pa.table([tokens, _with_nulls(matches), _volumes(table, order)], names=TOKENS.names)


def _merge_order(table: pa.Table) -> tuple[pa.Array, np.ndarray | None]:
    """(the ranks of RANKED rows in pieces each in id order, whole; the order that merges them, None: in order)."""
    ranks = columnar.whole(table[_RANK])
    return ranks, native.rows_in_order(ranks)


def _volumes(table: pa.Table, order: np.ndarray | None) -> pa.Array:
    """The volume counts of RANKED rows, in ORDER (None: as they are)."""
    volumes = _counts(table, "volume_count")
    return _with_nulls(volumes if order is None else volumes[order])


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
    table = pa.concat_tables(joined["tokens"])
    record_bytes("vocabulary part bytes", table.nbytes)
    table = sort_by_rank(with_rank(table))
    ids = pa.array(np.arange(first, first + table.num_rows, dtype=np.int64))
    return pa.table([ids, table["token"], table["match_count"], table["volume_count"]], schema=VOCABULARY)


def reserved(tokens: pa.Table, wanted: bool = True) -> pa.Table:
    """The reserved tokens among TOKENS (not WANTED: the others)."""
    found, others = split_reserved(tokens)
    return found if wanted else others


def split_reserved(tokens: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(the reserved tokens among TOKENS, sorted by token, the others): no look-up when none lies between the
    first token and the last, else one a token; no copy when none is reserved."""
    none = tokens.schema.empty_table() if tokens.schema != TOKENS else _NO_TOKENS
    if tokens.num_rows == 0:
        return none, tokens
    first, last = tokens["token"][0].as_py(), tokens["token"][-1].as_py()
    if not any(first <= token <= last for token in RESERVED_TOKENS):
        return none, tokens
    mask = pc.is_in(tokens["token"], pa.array(RESERVED_TOKENS))
    if not pc.any(mask).as_py():
        return none, tokens
    return tokens.filter(mask), tokens.filter(pc.invert(mask))


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
        corpus = tokens | "Corpus tokens with their rank" >> beam.MapTuple(
            lambda shard, t: (shard, with_rank(reserved(t, wanted=False))))
        # A part's group crosses the runner as one encoded element: it is bounded in bytes as well as in tokens
        # (measured: parts of 1M tokens, ~50 MB each, ran the TaskManager out of heap at 12M tokens).
        per_part, part_bytes = part_tokens(), range_bytes()
        parts = (
            corpus
            | "Cut the id order into parts" >> CutIntoParts(
                _RANK, range_sample_every(), 1.0, lambda t: max(t.num_rows / per_part, t.nbytes / part_bytes), shards)
            # The rank repeats each token's bytes: dropped before the shuffle, recomputed in number_part.
            | "Drop the rank" >> beam.MapTuple(lambda part, t: (part, t.drop_columns([_RANK])))
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
