"""The whole MKN stage: a few passes over bucketed tables on disk (tables.py), wired as one Beam
pipeline that runs the same on the embedded runner and on Flink.

    part files of orders 1..N                          (the import's n-gram files)
      | Scatter each part file      one task per file  -> input, extensions        adjust.py
      |                                                   (highest order: adjusted, summaries)
      | Adjust counts               (order, bucket)    -> adjusted, summaries      adjust.py
      |                                                   (orders below the highest)
      | Estimate discounts          summaries          -> discounts, the unigram context (a few numbers)
      | Unigram probabilities       (bucket)           -> probabilities of order 1  probability.py
      | for n = 2..N:
      |   Order-n contexts          (bucket)           -> mkn/contexts/order=n, mkn/ngrams/order=n-1,
      |                                                   weighted                 context.py
      |   Order-n probabilities     (bucket)           -> probabilities of order n (mkn/ngrams/order=N
      |                                                   at the highest order)    probability.py

Each pass starts when the one before has written all its files: its tasks are made from the
gathered references (tables.Written) of the tables they read. Only references, task
descriptions and per-order numbers cross Beam's stages; no n-gram does.
"""

from typing import NamedTuple

import apache_beam as beam

from ngramflow import schemas
from ngramflow.schemas import layout
from ngramflow.transforms.mkn import native
from ngramflow.transforms.mkn.adjust import adjust_bucket, scatter_part
from ngramflow.transforms.mkn.context import context_bucket, unigram_context_table
from ngramflow.transforms.mkn.discount import SUMMARY_FIELDS, add_summaries, discount_table, discounts_of
from ngramflow.transforms.mkn.probability import PROBABILITIES, interpolate_bucket, unigram_bucket
from ngramflow.transforms.mkn.tables import Index, Work
from ngramflow.transforms.sinks import write_named_table
from ngramflow.transforms.spill import gathered_to_one

SUMMARIES, ORPHANS = "summaries", "orphans"


class Task(NamedTuple):
    """One bucket of one order of a pass, and the files of the tables it reads."""

    order: int
    bucket: int
    index: Index


def tasks(written: list, work: Work, orders, reads: list[tuple[str, int]]) -> list[Task]:
    """A task per (order, bucket) for ORDERS, each with the files of READS ((table, order offset))."""
    index = Index.of(written)
    return [Task(order, bucket, Index({(table, order + offset, bucket): index.files(table, order + offset, bucket)
                                       for table, offset in reads}))
            for order in orders for bucket in range(work.buckets)]


class Estimates(NamedTuple):
    """What the adjust pass's summaries decide for the whole model: the discount record of each order
    (discount.discount_record) and the unigram context's sums (total, N1, N2, N3+)."""

    discounts: dict
    unigram_context: list


def estimates(summaries: list, model_order: int, fallback: tuple | None) -> Estimates:
    by_order = dict(summaries)
    unigram = by_order.get(1, [0] * (SUMMARY_FIELDS + 4))[SUMMARY_FIELDS:]
    return Estimates(discount_table(summaries, model_order, fallback), unigram)


class Pass(beam.DoFn):
    """A pass's tasks: each holds a bucket's tables and the kernel's output at once, a few hundred MB."""

    def setup(self):
        native.keep_freed_memory()


class Scatter(Pass):
    def __init__(self, work: Work, model_order: int):
        self.work, self.model_order = work, model_order

    def process(self, part):
        order, path = part
        written, summary = scatter_part(self.work, order, path, self.model_order)
        yield from written
        if summary is not None:
            yield beam.pvalue.TaggedOutput(SUMMARIES, (order, summary))


class Adjust(Pass):
    def __init__(self, work: Work, model_order: int):
        self.work, self.model_order = work, model_order

    def process(self, task: Task):
        written, summary = adjust_bucket(self.work, task.index, task.order, task.bucket, self.model_order)
        yield from written
        yield beam.pvalue.TaggedOutput(SUMMARIES, (task.order, summary))


class Unigrams(Pass):
    def __init__(self, work: Work, model_order: int, root: str):
        self.work, self.model_order, self.root = work, model_order, root

    def process(self, task: Task, model: Estimates):
        first = model.discounts[1]
        yield from unigram_bucket(self.work, task.index, task.bucket, discounts_of(first), model.unigram_context,
                                  first["ngrams"] - 1, self.model_order, self.root)


class Contexts(Pass):
    def __init__(self, work: Work, root: str):
        self.work, self.root = work, root

    def process(self, task: Task, model: Estimates):
        written, orphans = context_bucket(self.work, task.index, task.order, task.bucket,
                                          discounts_of(model.discounts[task.order]), self.root)
        yield from written
        yield beam.pvalue.TaggedOutput(ORPHANS, (task.order, orphans))


class Interpolate(Pass):
    def __init__(self, work: Work, model_order: int, root: str):
        self.work, self.model_order, self.root = work, model_order, root

    def process(self, task: Task):
        written, orphans = interpolate_bucket(self.work, task.index, task.order, task.bucket, self.model_order,
                                              self.root)
        yield from written
        yield beam.pvalue.TaggedOutput(ORPHANS, (task.order, orphans))


class EstimateMkn(beam.PTransform):
    """(order, path) of the input part files of orders 1..N -> the model's files under ``root``
    (mkn/ngrams, mkn/contexts). Returns a dict: "discounts", one record per order (see
    discount.discount_record); "orphans", (order, n-grams left out) pairs."""

    def __init__(self, work: Work, model_order: int, fallback: tuple | None, root: str):
        super().__init__()
        self.work, self.model_order, self.fallback, self.root = work, model_order, fallback, root

    def expand(self, parts):
        top, work, root = self.model_order, self.work, self.root
        scattered = (parts | "Spread the part files" >> beam.Reshuffle()
                     | "Scatter each part file" >> beam.ParDo(Scatter(work, top)).with_outputs(
                         SUMMARIES, main="written"))
        # The highest order's adjusted counts are its raw counts, scattered as such (but for a model of order 1,
        # whose reserved unigrams the adjust pass adds).
        adjusted_orders = range(1, top) if top > 1 else [1]
        adjusted = (
            gathered_to_one(scattered.written, "scattered files")
            | "Adjust: tasks" >> beam.FlatMap(
                lambda files: tasks(files, work, adjusted_orders, [("input", 0), ("extensions", 0)]))
            | "Adjust: spread" >> beam.Reshuffle()
            | "Adjust counts" >> beam.ParDo(Adjust(work, top)).with_outputs(SUMMARIES, main="written")
        )
        fallback = self.fallback
        summaries = (adjusted[SUMMARIES], scattered[SUMMARIES]) | "Summaries of both passes" >> beam.Flatten()
        model = (
            gathered_to_one(summaries | "Sum each order" >> beam.CombinePerKey(add_summaries), "summaries")
            | "Estimate discounts" >> beam.Map(estimates, top, fallback)
        )
        model_side = beam.pvalue.AsSingleton(model)
        _ = model | "Write the unigram context" >> beam.Map(
            lambda m: write_named_table(root, layout.part(layout.by_order(layout.MKN_CONTEXTS, 1), 0),
                                        unigram_context_table(m.unigram_context), schemas.MKN_CONTEXTS))
        adjusted_files = gathered_to_one(
            (adjusted.written, scattered.written) | "Adjusted files of both passes" >> beam.Flatten(), "adjusted files")
        lower = (
            adjusted_files
            | "Unigrams: tasks" >> beam.FlatMap(lambda files: tasks(files, work, [1], [("adjusted", 0)]))
            | "Unigrams: spread" >> beam.Reshuffle()
            | "Unigram probabilities" >> beam.ParDo(Unigrams(work, top, root), model_side)
        )
        orphans = []
        adjusted_side = beam.pvalue.AsSingleton(adjusted_files)
        for order in range(2, top + 1):
            contexts = (
                gathered_to_one(lower, f"order-{order - 1} probabilities")
                | f"Order-{order} contexts: tasks" >> beam.FlatMap(
                    lambda files, adjusted, order=order: tasks(files + adjusted, work, [order],
                                                              [("adjusted", 0), (PROBABILITIES, -1)]),
                    adjusted_side)
                | f"Order-{order} contexts: spread" >> beam.Reshuffle()
                | f"Order-{order} contexts" >> beam.ParDo(Contexts(work, root), model_side).with_outputs(
                    ORPHANS, main="written")
            )
            lower_files = beam.pvalue.AsSingleton(gathered_to_one(lower, f"order-{order - 1} probability files"))
            lower = (
                gathered_to_one(contexts.written, f"order-{order} weighted")
                | f"Order-{order} probabilities: tasks" >> beam.FlatMap(
                    lambda files, known, order=order: tasks(files + known, work, [order],
                                                           [("weighted", 0), (PROBABILITIES, -1)]),
                    lower_files)
                | f"Order-{order} probabilities: spread" >> beam.Reshuffle()
                | f"Order-{order} probabilities" >> beam.ParDo(Interpolate(work, top, root)).with_outputs(
                    ORPHANS, main="written")
            )
            orphans += [contexts[ORPHANS], lower[ORPHANS]]
            lower = lower.written
        records = model | "Discount records" >> beam.FlatMap(lambda m: [m.discounts[o] for o in sorted(m.discounts)])
        return {
            "discounts": records,
            "orphans": (
                orphans or [parts.pipeline | "No orphans" >> beam.Create([])]
            ) | "All orphans" >> beam.Flatten() | "Orphans per order" >> beam.CombinePerKey(sum),
        }
