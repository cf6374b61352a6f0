"""The vocabulary: every token of every kept n-gram, with dense, deterministic ids.

Ids follow the order (descending unigram match count, then token UTF-8 bytes),
after the reserved ids of schemas.RESERVED_TOKENS. A global sort by one worker
would need the whole vocabulary (millions of tokens for English) in memory, so
ids are assigned in buckets instead: tokens are grouped by (count, first two
bytes), one small collection of bucket sizes yields each bucket's first id, and
each bucket is sorted on its own.
"""

import apache_beam as beam

from schemas import RESERVED_TOKENS


def tokens_with_unigram_counts(ngram: str, acc):
    """(token, (match, volume)) for a unigram, (token, None) for each token of a longer n-gram."""
    if " " not in ngram:
        yield ngram, (acc[0], acc[1])
        return
    for token in set(ngram.split(" ")):
        yield token, None


def first_counts(values):
    """The unigram counts among a token's values, if any (there is at most one unigram per token)."""
    return next((v for v in values if v is not None), None)


def id_bucket(token: str, unigram) -> tuple:
    """A key whose sort order is the id order of the tokens it holds."""
    prefix = token.encode("utf-8")[:2]
    return (0, -unigram[0], prefix) if unigram is not None else (1, 0, prefix)


def bucket_first_ids(bucket_sizes, first_id: int) -> dict:
    starts, next_id = {}, first_id
    for bucket, size in sorted(bucket_sizes):
        starts[bucket] = next_id
        next_id += size
    return starts


def number_bucket(bucket_members, starts):
    bucket, members = bucket_members
    members = sorted(members, key=lambda m: m[0].encode("utf-8"))
    for offset, (token, unigram) in enumerate(members):
        yield vocabulary_row(starts[bucket] + offset, token, unigram)


def vocabulary_row(token_id: int, token: str, unigram) -> dict:
    match, volume = unigram if unigram is not None else (None, None)
    return {"id": token_id, "token": token, "match_count": match, "volume_count": volume}


class AssignDenseIds(beam.PTransform):
    """(token, unigram counts or None) -> vocabulary rows with ids from ``first_id``."""

    def __init__(self, first_id: int):
        super().__init__()
        self.first_id = first_id

    def expand(self, tokens):
        first_id = self.first_id
        bucketed = tokens | "Bucket by id order" >> beam.Map(lambda kv: (id_bucket(*kv), kv))
        starts = (
            bucketed
            | "Bucket keys" >> beam.Keys()
            | "Bucket sizes" >> beam.combiners.Count.PerElement()
            | "All bucket sizes" >> beam.combiners.ToList()
            | "First id of each bucket" >> beam.Map(bucket_first_ids, first_id)
        )
        return (
            bucketed
            | "Group buckets" >> beam.GroupByKey()
            | "Number tokens in bucket" >> beam.FlatMap(number_bucket, starts=beam.pvalue.AsSingleton(starts))
        )


class BuildVocabulary(beam.PTransform):
    """(ngram, total accumulator) of kept n-grams -> rows of schemas.VOCABULARY."""

    def expand(self, totals):
        token_counts = (
            totals
            | "Tokens of each n-gram" >> beam.FlatMapTuple(tokens_with_unigram_counts)
            | "Attach unigram counts" >> beam.CombinePerKey(first_counts)
        )
        reserved = (
            (
                token_counts | "Reserved tokens seen" >> beam.Filter(lambda kv: kv[0] in RESERVED_TOKENS),
                totals.pipeline | "Reserved tokens" >> beam.Create([(t, None) for t in RESERVED_TOKENS]),
            )
            | "All reserved tokens" >> beam.Flatten()
            | "One row per reserved token" >> beam.CombinePerKey(first_counts)
            | "Reserved ids" >> beam.MapTuple(lambda t, u: vocabulary_row(RESERVED_TOKENS.index(t), t, u))
        )
        ranked = (
            token_counts
            | "Corpus tokens" >> beam.Filter(lambda kv: kv[0] not in RESERVED_TOKENS)
            | "Dense ids" >> AssignDenseIds(first_id=len(RESERVED_TOKENS))
        )
        return (reserved, ranked) | "Vocabulary rows" >> beam.Flatten()
