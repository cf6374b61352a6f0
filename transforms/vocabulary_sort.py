"""The vocabulary by an external sort: the same ids as transforms/vocabulary.py, with memory bounded by a
budget however many tokens there are (the embedded runner's way; its stages hold whole collections).

    token run files -> token ranges          consecutive ranges of tokens, about RANGE_ROWS
                                             run rows each, as spill.plan_ranges cuts n-grams
                    -> one row per token     per range, in parallel: a k-way merge of the
                                             range's rows of the token run files MergeRange
                                             spilled (transforms/spill.py)
                    -> runs in id order      each token keyed by its place in the id order
                                             (descending unigram match count, then token
                                             bytes; tokens without a kept unigram last),
                                             spilled as sorted run files of that key (which
                                             holds the token's bytes) and the counts
                    -> numbered part files   one worker: a k-way merge of every range's runs
                                             in id order, ids consecutive,
                                             sizing.PART_TOKENS tokens per file

The reserved tokens are taken out on the way and get their fixed ids
(schemas.RESERVED_TOKENS), as BuildVocabulary gives them.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms.runfiles import RunFile, RunSpiller, merged
from ngramflow.transforms.sinks import StreamedTables
from ngramflow.transforms.sizing import TOKEN_SPILL_COMPRESSION, part_tokens
from ngramflow.transforms.spill import Range, gathered_to_one, plan_ranges
from ngramflow.transforms.vocabulary import (TOKENS, merge_tokens, rank_tokens_in_order, reserved_rows,
                                             sort_by_rank, split_reserved, token_of_rank, with_rank)

def rank_token_range(planned: Range, folder: str, budget: int) -> tuple[pa.Table, list[RunFile]]:
    """One token range (of token run files) -> (the reserved tokens it holds, with their counts; RunFiles of
    its other tokens in id order)."""
    # merged() hands the tokens over in token order, so each buffer of the ranked spiller is in token order.
    # The worker's budget, halved: the merge's batches and the ranked buffer are held at once.
    ranked = RunSpiller(folder, "ranked", rank_tokens_in_order, budget // 2, TOKEN_SPILL_COMPRESSION)
    seen_reserved = [TOKENS.empty_table()]
    runs = []
    for tokens in merged(folder, "tokens-pass", planned.runs, merge_tokens, budget // 2, planned.lo, planned.hi,
                         TOKEN_SPILL_COMPRESSION):
        found, others = split_reserved(tokens)
        seen_reserved.append(found)
        runs += ranked.add(with_rank(others).drop_columns(["token"]))
    return pa.concat_tables(seen_reserved), runs + ranked.flush()


def number_vocabulary(ranked: list[tuple[pa.Table, list[RunFile]]], folder: str, budget: int, root: str) -> int:
    """Write the vocabulary's part files under ROOT from every token range's rank_token_range; returns the
    corpus tokens."""
    seen_reserved = [TOKENS.empty_table(), *(table for table, _ in ranked)]
    runs = [run for _, range_runs in ranked for run in range_runs]
    next_id, per_part = len(RESERVED_TOKENS), part_tokens()
    with StreamedTables(root, VOCABULARY) as files:
        files.write("part-reserved", reserved_rows(pa.concat_tables(seen_reserved)))
        for table in merged(folder, "ranked-pass", runs, sort_by_rank, budget, compression=TOKEN_SPILL_COMPRESSION):
            while table.num_rows:
                part = (next_id - len(RESERVED_TOKENS)) // per_part
                rows = min(table.num_rows, (part + 1) * per_part + len(RESERVED_TOKENS) - next_id)
                piece = table.slice(0, rows)
                ids = pa.array(np.arange(next_id, next_id + rows, dtype=np.int64))
                files.write(f"part-{part:05d}", pa.table(
                    [ids, token_of_rank(piece), piece["match_count"], piece["volume_count"]], schema=VOCABULARY))
                next_id, table = next_id + rows, table.slice(rows)
    return next_id - len(RESERVED_TOKENS)


class NumberVocabularyOnDisk(beam.PTransform):
    """[token RunFiles] (one list) -> the vocabulary's part files under ``root``; outputs the number of
    corpus tokens. The token ranges are put in id order by up to ``workers`` at once."""

    def __init__(self, folder: str, budget: int, root: str, range_rows: int, workers: int):
        super().__init__()
        self.folder, self.budget, self.root, self.range_rows, self.workers = folder, budget, root, range_rows, workers

    def expand(self, token_runs):
        range_rows, workers = self.range_rows, self.workers
        ranked = (
            token_runs
            | "Plan token ranges" >> beam.FlatMap(lambda runs: plan_ranges(runs, range_rows, workers))
            | "Spread the token ranges over workers" >> beam.Reshuffle()
            | "Put each token range in id order" >> beam.Map(rank_token_range, self.folder, self.budget)
        )
        return gathered_to_one(ranked, "ranked token runs") | "Number tokens in id order" >> beam.Map(
            number_vocabulary, self.folder, self.budget, self.root)
