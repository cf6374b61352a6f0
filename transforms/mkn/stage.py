"""The whole MKN stage: n-gram rows of orders 1..N in, model rows per order out."""

import apache_beam as beam

from ngramflow.transforms.mkn.adjust import AdjustCounts
from ngramflow.transforms.mkn.context import ContextStats, context_row
from ngramflow.transforms.mkn.discount import EstimateDiscounts
from ngramflow.transforms.mkn.probability import InterpolateOrder, UnigramProbabilities, model_row


class EstimateMkn(beam.PTransform):
    """(ngram, match count) pairs of orders 1..N -> an order-N model.

    Returns a dict: "ngrams" and "contexts", lists of PCollections of
    schemas.MKN_NGRAMS / MKN_CONTEXTS rows (tuples in column order) indexed by order - 1; "discounts",
    one record per order (see discount.discount_record); "orphans", (order,
    n-grams left out) pairs.
    """

    def __init__(self, model_order: int, fallback: tuple | None):
        super().__init__()
        self.model_order, self.fallback = model_order, fallback

    def expand(self, counts):
        top = self.model_order
        adjusted = counts | "Adjust counts" >> AdjustCounts(top)
        table = adjusted | "Estimate discounts" >> EstimateDiscounts(top, self.fallback)
        table_side = beam.pvalue.AsSingleton(table)
        by_order = adjusted | "Split by order" >> beam.Partition(lambda row, _n: row[1] - 1, top)
        stats = [grams | f"Order-{order} context statistics" >> ContextStats()
                 for order, grams in enumerate(by_order, 1)]

        probs = by_order[0] | "Order-1 probabilities" >> UnigramProbabilities(stats[0], table_side)
        model_rows, orphans = [], []
        for order in range(2, top + 1):
            probs, lower_rows, lost = (
                (probs, by_order[order - 1])
                | f"Order-{order} probabilities" >> InterpolateOrder(order, stats[order - 1], table_side))
            model_rows.append(lower_rows)
            orphans.append(lost)
        model_rows.append(probs | f"Order-{top} rows" >> beam.MapTuple(
            lambda ngram, count_prob: model_row(ngram, top, count_prob[0], count_prob[1], None)))

        contexts = [
            order_stats | f"Order-{order} context rows" >> beam.MapTuple(
                lambda context, stats, order=order: context_row(context, stats, order))
            for order, order_stats in enumerate(stats, 1)
        ]
        return {
            "ngrams": model_rows,
            "contexts": contexts,
            "discounts": table | "Discount records" >> beam.FlatMap(lambda t: [t[o] for o in sorted(t)]),
            "orphans": (
                orphans or [counts.pipeline | "No orphans" >> beam.Create([])]
            ) | "All orphans" >> beam.Flatten() | "Orphans per order" >> beam.CombinePerKey(sum),
        }
