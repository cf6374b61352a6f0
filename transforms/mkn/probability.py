"""Interpolated Modified Kneser-Ney probabilities, order by order.

For an n-gram hw with adjusted count a, and context h with sum S and backoff
mass gamma(h) (context.py):

    u(w | h) = (a - D_n(a)) / S                     initial probability
    p(w | h) = u(w | h) + gamma(h) p(w | h')        h' = h without its first token

The unigram level interpolates with the uniform distribution 1/|V|, |V|
counting <unk> but not <s>. KenLM's special cases: <s> is never predicted and
gets probability 1 (log10 0), so scoring it is harmless; <unk> has count 0, so
it gets only interpolated mass. The formulas are the native kernel's (native.py,
native/src/mkn.rs: ``mkn_unigrams``, ``interpolate``).

    unigram_bucket      one bucket of "adjusted" unigrams -> their "probabilities" (ngram, a, p), in
                        the same bucket (the unigram context's sums are global, a few numbers)
    interpolate_bucket  one bucket of order n's "weighted" rows (bucketed by suffix) and of order n-1's
                        "probabilities" -> order n's "probabilities" in the bucket of each n-gram, or
                        at the highest order its model rows. An n-gram whose suffix is missing from
                        the model is left out and counted (orphans).
"""

import pyarrow as pa

from ngramflow import schemas
from ngramflow.schemas import layout
from ngramflow.transforms.mkn import native
from ngramflow.transforms.mkn.adjust import ADJUSTED
from ngramflow.transforms.mkn.discount import Discounts
from ngramflow.transforms.mkn.tables import Index, Work, order_column, write_model

#: The log10 written for a probability or backoff of exactly 0 (ARPA's conventional "minus infinity";
#: the kernel's LOG10_ZERO).
LOG10_ZERO = -99.0

PROBABILITIES = "probabilities"
PROBABILITY = native.schema(a=pa.int64(), p=pa.float64())
WEIGHTED = native.schema(a=pa.int64(), u=pa.float64(), gamma=pa.float64())


def unigram_bucket(work: Work, index: Index, bucket: int, discounts: Discounts, stats: list[int],
                   vocab_size: int, model_order: int, out_root: str) -> list:
    """One bucket of unigrams -> their probabilities, interpolated with the uniform 1/|V|."""
    highest = model_order == 1
    laid = native.unigrams(work.read(index, "adjusted", 1, bucket, ADJUSTED), stats, discounts, vocab_size,
                           as_log10=highest, buckets=0 if highest else work.buckets)
    if not highest:
        return work.write(PROBABILITIES, 1, laid)
    write_model(out_root, layout.part(layout.by_order(layout.MKN_NGRAMS, 1), bucket), model_rows(laid.table, 1),
                schemas.MKN_NGRAMS)
    return []


def model_rows(rows: pa.Table, order: int) -> pa.Table:
    """Model rows of the highest order (no backoff) from ROWS (ngram, a, p as its log10)."""
    return pa.table({"ngram": rows.column("ngram"), "order": order_column(order, rows.num_rows),
                     "adjusted_count": rows.column("a"), "log10_prob": rows.column("p"),
                     "log10_backoff": pa.nulls(rows.num_rows, pa.float64())})


def interpolate_bucket(work: Work, index: Index, order: int, bucket: int, model_order: int,
                       out_root: str) -> tuple[list, int]:
    """One suffix bucket of order ORDER -> (files written, orphans)."""
    weighted = work.read(index, "weighted", order, bucket, WEIGHTED)
    lower = work.read(index, PROBABILITIES, order - 1, bucket, PROBABILITY)
    highest = order == model_order
    laid = native.interpolate(weighted, lower, as_log10=highest, buckets=0 if highest else work.buckets)
    orphans = weighted.num_rows - laid.table.num_rows
    if not highest:
        return work.write(PROBABILITIES, order, laid), orphans
    write_model(out_root, layout.part(layout.by_order(layout.MKN_NGRAMS, order), bucket),
                model_rows(laid.table, order), schemas.MKN_NGRAMS)
    return [], orphans
