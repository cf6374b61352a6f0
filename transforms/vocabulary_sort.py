"""The vocabulary by an external sort: the same ids as transforms/vocabulary.py, with memory bounded by a
budget however many tokens there are (the embedded runner's way; its stages hold whole collections).

    token run files -> one row per token     a k-way merge of the token run files that
                                             MergeRange spilled (transforms/spill.py)
                    -> runs in id order      each token keyed by its place in the id order
                                             (descending unigram match count, then token
                                             bytes; tokens without a kept unigram last),
                                             spilled as sorted run files of that key (which
                                             holds the token's bytes) and the counts
                    -> numbered part files   a k-way merge of those in id order: ids are
                                             consecutive, sizing.PART_TOKENS tokens per file

One worker does it, streaming; the reserved tokens are taken out on the way and
get their fixed ids (schemas.RESERVED_TOKENS), as BuildVocabulary gives them.
"""

import apache_beam as beam
import numpy as np
import pyarrow as pa

from ngramflow.schemas import RESERVED_TOKENS, VOCABULARY
from ngramflow.transforms.runfiles import RunFile, RunSpiller, merged
from ngramflow.transforms.sinks import StreamedTables
from ngramflow.transforms.sizing import part_tokens
from ngramflow.transforms.vocabulary import (TOKENS, merge_tokens, rank_tokens_in_order, reserved, reserved_rows,
                                             sort_by_rank, token_of_rank, with_rank)

def number_vocabulary(token_runs: list[RunFile], folder: str, budget: int, root: str) -> int:
    """Write the vocabulary's part files under ROOT from the token run files; returns the corpus tokens."""
    # merged() hands the tokens over in token order, so each buffer of the ranked spiller is in token order.
    seen_reserved, ranked = [], RunSpiller(folder, "ranked", rank_tokens_in_order, budget)
    runs = []
    for tokens in merged(folder, "tokens-pass", token_runs, merge_tokens, budget):
        seen_reserved.append(reserved(tokens))
        runs += ranked.add(with_rank(reserved(tokens, wanted=False)).drop_columns(["token"]))
    runs += ranked.flush()
    next_id, per_part = len(RESERVED_TOKENS), part_tokens()
    with StreamedTables(root, VOCABULARY) as files:
        files.write("part-reserved", reserved_rows(pa.concat_tables([TOKENS.empty_table(), *seen_reserved])))
        for table in merged(folder, "ranked-pass", runs, sort_by_rank, budget):
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
    corpus tokens."""

    def __init__(self, folder: str, budget: int, root: str):
        super().__init__()
        self.folder, self.budget, self.root = folder, budget, root

    def expand(self, token_runs):
        return token_runs | "Number tokens in id order" >> beam.Map(
            number_vocabulary, self.folder, self.budget, self.root)
