"""Per-context statistics: what Kneser-Ney needs to know about the successors of each history.

For a context h (the first n-1 tokens of n-grams of order n; '' for unigrams):
the sum of the successors' adjusted counts, and N1, N2, N3+ (how many
successors have adjusted count 1, 2, and 3 or more). Successors with count 0
(<unk>, <s>) add nothing, as in KenLM.
"""

import apache_beam as beam

from ngramflow.transforms.checked import INT64_MAX, too_large
from ngramflow.transforms.mkn.combine import SumOf
from ngramflow.transforms.mkn.discount import DiscountError, Discounts
from ngramflow.transforms.mkn.grams import context_of


def successor_stats(count: int) -> tuple:
    """(sum, N1, N2, N3+) of a context with this one successor."""
    return count, int(count == 1), int(count == 2), int(count >= 3)


def merge_stats(stats) -> tuple:
    total = n1 = n2 = n3plus = 0
    for s_total, s_n1, s_n2, s_n3plus in stats:
        total += s_total
        n1 += s_n1
        n2 += s_n2
        n3plus += s_n3plus
    return total, n1, n2, n3plus


def backoff_mass(stats: tuple, discounts: Discounts) -> float:
    """gamma(h): the mass the discounts free, (D1 N1 + D2 N2 + D3+ N3+) / sum.

    A context whose successors all count 0 observed nothing, so all its mass
    goes to the lower order.
    """
    total, n1, n2, n3plus = stats
    if total == 0:
        return 1.0
    return (discounts.d1 * n1 + discounts.d2 * n2 + discounts.d3plus * n3plus) / total


class ContextSumOverflow(DiscountError):
    """A context's adjusted_sum does not fit int64.

    The import checks each order's total, so only a context whose raw counts
    come within its continuation counts of 2**63 gets here. It carries the
    stage's marker, so `import --mkn-order` and `ngramflow mkn` both show it
    as one line.
    """


def context_row(context: str, stats: tuple, order: int) -> tuple:
    """A row of schemas.MKN_CONTEXTS, as a tuple; the sums are exact Python ints, checked against the int64 column."""
    if stats[0] > INT64_MAX:
        raise ContextSumOverflow(too_large(f"the adjusted_sum of {order}-gram context {context!r}"))
    return (context, order, *stats)


class ContextStats(beam.PTransform):
    """Adjusted rows of one order -> (context, (sum, N1, N2, N3+))."""

    def expand(self, adjusted):
        return (
            adjusted
            | "Key by context" >> beam.MapTuple(
                lambda ngram, _order, count, _origin: (context_of(ngram), successor_stats(count)))
            | "Sum per context" >> beam.CombinePerKey(SumOf(merge_stats, (0, 0, 0, 0)))
        )
