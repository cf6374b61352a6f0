"""Adjusted counts: what Kneser-Ney counts in place of raw counts.

a(w1..wn) is the raw count for the model's highest order and for n-grams that
begin with _START_ (nothing precedes a sentence start, so there is no left
context to count); for every other n-gram it is N1+(. w1..wn), the number of
distinct (n+1)-grams in the input whose suffix it is. KenLM gives the unigrams
<s> and <unk> the count 0.

Published counts are not raw text, so two cases KenLM never meets are handled
explicitly, and each is counted in the manifest:

- SUFFIX: an n-gram missing from the input but implied as the suffix of a
  longer one (e.g. the 1-gram files lack _END_, or only some files of an order
  were imported). Its continuation count is known exactly, so it is added.
- FLOOR: an n-gram of the input whose left extensions were all pruned away
  (Google publishes only totals >= 40). It did occur, after something, so it
  has at least one left extension: its count is that lower bound, 1.
"""

import apache_beam as beam

from ngramflow.schemas import RESERVED_TOKENS, START, UNK
from ngramflow.transforms.mkn.combine import SumOf
from ngramflow.transforms.mkn.grams import order_of, starts_sentence, suffix_of

INPUT, SUFFIX, FLOOR, RESERVED = "input", "suffix", "floor", "reserved"
ORIGINS = (INPUT, SUFFIX, FLOOR, RESERVED)


def count_parts(ngram: str, match_count: int):
    """(key, (raw count or None, left extensions)) parts: the n-gram itself, and one extension of its suffix."""
    yield ngram, (match_count, 0)
    if " " in ngram:
        yield suffix_of(ngram), (None, 1)


def merge_parts(parts) -> tuple:
    """Sum of parts; associative and commutative, so it serves as a Beam combiner."""
    raw, extensions = None, 0
    for part_raw, part_extensions in parts:
        if part_raw is not None:
            raw = part_raw if raw is None else raw + part_raw
        extensions += part_extensions
    return raw, extensions


def adjusted_count(ngram: str, parts: tuple, model_order: int) -> tuple:
    """(ngram, order, adjusted count, origin) from the merged parts of one key."""
    raw, extensions = parts
    order = order_of(ngram)
    if order == 1 and ngram in (START, UNK):
        return ngram, order, 0, RESERVED if raw is None else INPUT
    if order == model_order or starts_sentence(ngram):
        return ngram, order, raw or 0, INPUT if raw is not None else RESERVED
    if raw is None:
        return ngram, order, extensions, SUFFIX if extensions else RESERVED
    if extensions == 0:
        return ngram, order, 1, FLOOR
    return ngram, order, extensions, INPUT


class AdjustCounts(beam.PTransform):
    """(ngram, raw count) of orders 1..N -> (ngram, order, adjusted count, origin) for every n-gram of the model."""

    def __init__(self, model_order: int):
        super().__init__()
        self.model_order = model_order

    def expand(self, counts):
        model_order = self.model_order
        reserved = (
            counts.pipeline
            | "Reserved unigrams" >> beam.Create([(token, (None, 0)) for token in RESERVED_TOKENS])
        )
        return (
            (counts | "N-gram and suffix parts" >> beam.FlatMapTuple(count_parts),
             reserved)
            | "All parts" >> beam.Flatten()
            | "Merge parts per n-gram" >> beam.CombinePerKey(SumOf(merge_parts, (None, 0)))
            | "Adjusted count" >> beam.MapTuple(lambda ngram, parts: adjusted_count(ngram, parts, model_order))
        )
