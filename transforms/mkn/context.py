"""Per-context statistics: what Kneser-Ney needs to know about the successors of each history, and
what it gives them.

For a context h (the first n-1 tokens of n-grams of order n; '' for unigrams):
the sum of the successors' adjusted counts, and N1, N2, N3+ (how many
successors have adjusted count 1, 2, and 3 or more). Successors with count 0
(<unk>, <s>) add nothing, as in KenLM. The backoff mass
gamma(h) = (D1 N1 + D2 N2 + D3+ N3+) / sum is what the discounts free.

    context_bucket  one bucket of order n's "adjusted" rows (bucketed by context) and of order n-1's
                    "probabilities" -> the bucket's rows of mkn/contexts/order=n; the order-(n-1) model
                    rows (each with its backoff, log10 gamma of itself as a context); and the order-n
                    rows whose context is in the model, as "weighted" rows (ngram, a, u, gamma of the
                    context) in the bucket of their suffix. Successors of a context missing from the
                    model are left out and counted (orphans).

The sums, joins and formulas are the native kernel's (native.py, native/src/mkn.rs: ``context_bucket``).
The unigram context '' has every unigram as successor: its sums are added up over the buckets
of the adjust pass instead (adjust.py), and its row is written once (unigram_context_table).
"""

import pyarrow as pa

from ngramflow import schemas
from ngramflow.schemas import layout
from ngramflow.transforms.checked import INT64_MAX, too_large
from ngramflow.transforms.mkn import native
from ngramflow.transforms.mkn.adjust import ADJUSTED
from ngramflow.transforms.mkn.discount import DiscountError, Discounts
from ngramflow.transforms.mkn.probability import PROBABILITIES, PROBABILITY
from ngramflow.transforms.mkn.tables import Index, Work, order_column, write_model


class ContextSumOverflow(DiscountError):
    """A context's adjusted_sum does not fit int64.

    The import checks each order's total, so only a context whose raw counts
    come within its continuation counts of 2**63 gets here. It carries the
    stage's marker, so `import --mkn-order` and `ngramflow mkn` both show it
    as one line.
    """


def check_sum(order: int, overflowing: str | None) -> None:
    """ContextSumOverflow if the kernel found an order-ORDER context whose sum does not fit int64."""
    if overflowing is not None:
        raise ContextSumOverflow(too_large(f"the adjusted_sum of {order}-gram context {overflowing!r}"))


def unigram_context_table(stats: list[int]) -> pa.Table:
    """The one row of mkn/contexts/order=1: the context '' and its sums (total, N1, N2, N3+)."""
    if stats[0] > INT64_MAX:
        raise ContextSumOverflow(too_large("the adjusted_sum of the unigram context"))
    return pa.Table.from_pylist([dict(zip(("context", "order", "adjusted_sum", "n1", "n2", "n3plus"),
                                          ("", 1, *stats)))], schema=schemas.MKN_CONTEXTS)


def context_bucket(work: Work, index: Index, order: int, bucket: int, discounts: Discounts,
                   out_root: str) -> tuple[list, int]:
    """One context bucket of order ORDER -> ("weighted" files written, orphans); writes the bucket's
    context rows and order-(ORDER-1) model rows under OUT_ROOT."""
    successors = work.read(index, "adjusted", order, bucket, ADJUSTED)
    lower = work.read(index, PROBABILITIES, order - 1, bucket, PROBABILITY)
    found = native.contexts(successors, lower, discounts, work.buckets)
    check_sum(order, found.overflow)
    sums = found.contexts
    write_model(out_root, layout.part(layout.by_order(layout.MKN_CONTEXTS, order), bucket), pa.table({
        "context": sums.column("ngram"), "order": order_column(order, sums.num_rows),
        "adjusted_sum": sums.column("total"), "n1": sums.column("n1"), "n2": sums.column("n2"),
        "n3plus": sums.column("n3plus")}), schemas.MKN_CONTEXTS)
    write_model(out_root, layout.part(layout.by_order(layout.MKN_NGRAMS, order - 1), bucket), pa.table({
        "ngram": lower.column("ngram"), "order": order_column(order - 1, lower.num_rows),
        "adjusted_count": lower.column("a"), "log10_prob": found.lower_log10_probs,
        "log10_backoff": found.lower_log10_backoffs}), schemas.MKN_NGRAMS)
    return work.write("weighted", order, found.weighted), successors.num_rows - found.weighted.table.num_rows
