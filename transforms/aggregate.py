"""Combine partial counts per n-gram across files and apply the minimum count."""

import apache_beam as beam

from transforms import counts


class AggregateNgrams(beam.PTransform):
    """(ngram, partial accumulator) -> (ngram, total accumulator) with total match >= min_count.

    The threshold applies to the total over all kept years, never to single year
    rows (Google's own publication threshold works the same way).
    """

    def __init__(self, min_count: int = 1):
        super().__init__()
        self.min_count = min_count

    def expand(self, partial_counts):
        min_count = self.min_count
        return (
            partial_counts
            | "Sum counts per n-gram" >> beam.CombinePerKey(counts.SumNgramCounts())
            | "Keep n-grams with enough matches" >> beam.Filter(lambda kv: kv[1][0] >= min_count)
        )


class ToNgramRows(beam.PTransform):
    """(ngram, total accumulator) -> output rows of schemas.NGRAMS."""

    def expand(self, totals):
        return totals | "Build n-gram rows" >> beam.MapTuple(counts.to_row)


def order_stats(row):
    return row["order"], (1, row["match_count"], row["volume_count"])


class SummarizeOrders(beam.PTransform):
    """N-gram rows -> one record per order: n-gram count and match/volume totals."""

    def expand(self, rows):
        return (
            rows
            | "Key by order" >> beam.Map(order_stats)
            | "Sum per order" >> beam.CombinePerKey(beam.combiners.TupleCombineFn(sum, sum, sum))
            | "Order record" >> beam.MapTuple(
                lambda order, t: {"order": order, "ngrams": t[0], "match_count": t[1], "volume_count": t[2]})
        )
