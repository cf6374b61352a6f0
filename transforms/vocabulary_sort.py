"""The vocabulary by an external sort: the same ids as transforms/vocabulary.py, with memory bounded by a
budget however many tokens there are (the embedded runner's way; its stages hold whole collections).

The ids follow the id order: tokens with a unigram row by descending count, then token bytes; then the
tokens without one, by token bytes. The read stage ranks every unigram row as it comes (vocabulary.TokenRuns:
"ranked" run files, sorted by a key whose byte order is the id order and which holds the token's bytes);
what is left is to find the tokens of longer n-grams that have none, and to number them all:

    token run files -> token ranges          the n-gram files of unigrams alone written as
    (only when longer                        run files of their rows, in parallel; then
    n-grams gave some)                       consecutive ranges of tokens, about RANGE_ROWS
                                             run rows each, as spill.plan_ranges cuts n-grams
                    -> uncounted tokens      per range, in parallel: a k-way merge of the
                                             range's rows of the token run files (of longer
                                             n-grams, and of the unigrams alone), of which the
                                             last keeps the tokens none of whose rows has a
                                             count, one row each
                    -> runs in id order      the tokens without a count, keyed by their place
                                             in the id order: in token order already
                    -> id ranges             consecutive ranges of the id order over these and
                                             the read stage's ranked runs, about
                                             sizing.PART_TOKENS tokens each, cut as
                                             spill.plan_ranges cuts n-grams; each range's
                                             first id is the count of ranked rows below it
                                             (runfiles.rows_before)
                    -> numbered part files   per id range, in parallel: a k-way merge of
                                             every ranked run, ids consecutive, in files of at
                                             most PART_TOKENS tokens named by their first id

The reserved tokens are taken out on the way and get their fixed ids
(schemas.RESERVED_TOKENS), as BuildVocabulary gives them.
"""

from typing import NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms.pools import named_pool
from ngramflow.transforms.runfiles import AscendingRuns, RunFile, file_system, merged, rows_before, write_run_file
from ngramflow.transforms.sinks import StreamedTables
from ngramflow.transforms.sizing import TOKEN_SPILL_COMPRESSION, part_tokens, release_freed_memory
from ngramflow.transforms.spill import Range, gathered_to_one, plan_ranges
from ngramflow.transforms.vocabulary import (RANKED, RESERVED, TOKEN_ROWS, TOKENS, UNIGRAM_FILE, UNIGRAMS,
                                             merge_tokens, ranks_in_order, reserved_rows, split_reserved,
                                             tokens_by_rank, uncounted_tokens, with_rank)


def plan_token_ranges(runs: list[RunFile], range_rows: int, workers: int, folder: str, budget: int,
                      each=map) -> list[Range]:
    """The token ranges of the merge pass over the token run files: none when no table of longer n-grams gave
    tokens (every token has its unigram row, ranked as it was read). Else the n-gram files of unigrams alone
    are written as run files first (unigram_runs, by EACH, a map)."""
    if not any(run.kind == TOKEN_ROWS for run in runs):
        return []
    runs = [run for run in runs if run.kind in (TOKEN_ROWS, UNIGRAMS)] + unigram_runs(runs, folder, budget, each)
    # A token range per worker at least: 2.1M tokens, just under RANGE_ROWS, were ranked on one core (0.54 s).
    return plan_ranges(runs, range_rows, workers, at_least=workers)


def unigram_runs(runs: list[RunFile], folder: str, budget: int, each=map) -> list[RunFile]:
    """The n-gram files that the UNIGRAM_FILE records among RUNS name -> run files of their rows as TOKENS
    (UNIGRAMS), within BUDGET each: by EACH, a map over the files. A file may hold unigram rows that tokens of
    longer n-grams gave too: merge_tokens keeps a token's one counted row, however often it is given."""
    files = sorted({run.path for run in runs if run.kind == UNIGRAM_FILE})
    written = each(lambda path: write_run_file(folder, UNIGRAMS, _unigram_rows(path), budget,
                                                TOKEN_SPILL_COMPRESSION), files)
    return [run for run in written if run is not None]


def _unigram_rows(path: str):
    """The rows of the n-gram file PATH (sorted, of one order) as TOKENS tables, a row group at a time."""
    fs, inner = file_system(path)
    with fs.open_input_file(inner) as fh:
        ngrams = pq.ParquetFile(fh)
        for group in range(ngrams.num_row_groups):
            rows = ngrams.read_row_group(group, columns=["ngram", "match_count", "volume_count"])
            yield pa.table(rows.columns, schema=TOKENS)


def rank_token_range(planned: Range, folder: str, budget: int) -> list[RunFile]:
    """One token range (of token run files) -> RunFiles of its tokens without a count, in id order. A token with
    a count has its unigram row, ranked already (and a reserved one its fixed id: ranked_while_read finds
    their counts)."""
    # merged() hands the tokens over in token order, which is the id order of the tokens without a count.
    ranked = AscendingRuns(folder, RANKED, budget // 2, TOKEN_SPILL_COMPRESSION)
    runs = []
    for tokens in merged(folder, "tokens-pass", planned.runs, merge_tokens, budget // 2, planned.lo, planned.hi,
                         TOKEN_SPILL_COMPRESSION, last=uncounted_tokens):
        runs += ranked.add(with_rank(split_reserved(tokens)[1]).drop_columns(["token", "match_count"]))
    return runs + ranked.flush()


def ranked_while_read(runs: list[RunFile], folder: str, budget: int) -> tuple[pa.Table, list[RunFile]]:
    """Every token run file -> (the reserved tokens among the unigram rows, with their counts; the RunFiles of
    the unigram rows the read stage ranked). Every unigram row is ranked as it is read (vocabulary.TokenRuns),
    the reserved tokens apart: the counts of the reserved tokens are all here."""
    reserved = [run for run in runs if run.kind == RESERVED]
    seen = list(merged(folder, "reserved-pass", reserved, merge_tokens, budget, compression=TOKEN_SPILL_COMPRESSION))
    return pa.concat_tables([TOKENS.empty_table(), *seen]), [run for run in runs if run.kind == RANKED]


def write_reserved(seen_reserved: pa.Table, root: str) -> None:
    """The vocabulary's part file of the reserved ids, with the counts of those ranked_while_read found."""
    with StreamedTables(root, VOCABULARY) as files:
        files.write("part-reserved", reserved_rows(seen_reserved))


class IdRange(NamedTuple):
    """One range of the id order (a spill.Range of rank keys over the ranked run files), numbered from
    FIRST_ID."""

    first_id: int
    ranks: Range


def plan_id_ranges(runs: list[RunFile], per_part: int, workers: int) -> list[IdRange]:
    """The ranked run files (ranked_while_read's and every token range's) -> consecutive ranges of the id order
    of about PER_PART tokens (a multiple of WORKERS of them), each numbered from the count of the tokens below
    it."""
    return [IdRange(len(RESERVED_TOKENS) + sum(rows_before(run, ranks.lo) for run in runs), ranks)
            for ranks in plan_ranges(runs, per_part, workers)]


def number_id_range(planned: IdRange, folder: str, budget: int, root: str, per_part: int) -> int:
    """One id range -> its part files of at most PER_PART tokens each, ids consecutive from the range's
    first, each file named by its first id (ranges are cut between run files' batches, not at multiples of
    PER_PART); returns its tokens."""
    next_id, ranks = planned
    with StreamedTables(root, VOCABULARY) as files:
        for table in merged(folder, "ranked-pass", ranks.runs, ranks_in_order, budget, ranks.lo, ranks.hi,
                            TOKEN_SPILL_COMPRESSION, last=tokens_by_rank):
            while table.num_rows:
                in_part = (next_id - planned.first_id) % per_part
                rows = min(table.num_rows, per_part - in_part)
                piece = table.slice(0, rows)
                ids = pa.array(np.arange(next_id, next_id + rows, dtype=np.int64))
                files.write(f"part-{next_id - in_part:012d}", pa.table(
                    [ids, piece["token"], piece["match_count"], piece["volume_count"]], schema=VOCABULARY))
                next_id, table = next_id + rows, table.slice(rows)
    return next_id - planned.first_id


def number_vocabulary(runs: list[RunFile], folder: str, budget: int, root: str, range_rows: int,
                      workers: int) -> list[int]:
    """Every token RunFile -> the vocabulary's part files under ROOT, both passes in one call by WORKERS threads
    of this process, each within BUDGET; returns the tokens of each id range. The embedded runner's way
    (NumberVocabularyOnDisk): its workers are threads of one process, and the passes' steps of the graph
    cost it more than they spread."""
    release_freed_memory()
    seen_reserved, ranked = ranked_while_read(runs, folder, budget)
    write_reserved(seen_reserved, root)
    with named_pool(workers, "vocabulary") as pool:
        for range_runs in pool.map(lambda planned: rank_token_range(planned, folder, budget),
                                   plan_token_ranges(runs, range_rows, workers, folder, budget, pool.map)):
            ranked += range_runs
        return list(pool.map(lambda planned: number_id_range(planned, folder, budget, root, part_tokens()),
                             plan_id_ranges(ranked, part_tokens(), workers)))


class NumberVocabularyOnDisk(beam.PTransform):
    """[token RunFiles] (one list) -> the vocabulary's part files under ``root``; outputs the number of
    tokens of each id range. The token ranges are put in id order, and the id ranges numbered, by up to
    ``workers`` at once: with ``threads``, by threads of the one worker that takes the list (number_vocabulary;
    the embedded runner's), else spread over the runner's workers by two passes of steps (Flink's, whose workers
    may be other machines)."""

    def __init__(self, folder: str, budget: int, root: str, range_rows: int, workers: int, threads: bool = False):
        super().__init__()
        self.folder, self.budget, self.root, self.range_rows, self.workers = folder, budget, root, range_rows, workers
        self.threads = threads

    def expand(self, token_runs):
        range_rows, workers, folder, budget, root = self.range_rows, self.workers, self.folder, self.budget, self.root
        if self.threads:
            return token_runs | "Put the tokens in id order and number them" >> beam.FlatMap(
                number_vocabulary, folder, budget, root, range_rows, workers)
        ranked_ranges = (
            token_runs
            | "Plan token ranges" >> beam.FlatMap(plan_token_ranges, range_rows, workers, folder, budget)
            | "Spread the token ranges over workers" >> beam.Reshuffle()
            | "Put each token range in id order" >> beam.Map(rank_token_range, folder, budget)
        )
        read = token_runs | "Runs ranked as read" >> beam.Map(ranked_while_read, folder, budget)
        read | "Write the reserved ids" >> beam.MapTuple(lambda seen_reserved, _: write_reserved(seen_reserved, root))
        ranked = gathered_to_one(
            (read | "Their ranked runs" >> beam.MapTuple(lambda _, runs: runs), ranked_ranges)
            | "All ranked runs" >> beam.Flatten(),
            "ranked token runs")
        return (
            ranked
            | "Plan id ranges" >> beam.FlatMap(
                lambda ranked: plan_id_ranges([run for runs in ranked for run in runs], part_tokens(), workers))
            | "Spread the id ranges over workers" >> beam.Reshuffle()
            | "Number each id range" >> beam.Map(
                lambda planned: number_id_range(planned, folder, budget, root, part_tokens()))
        )
