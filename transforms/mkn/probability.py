"""Interpolated Modified Kneser-Ney probabilities and backoffs, order by order.

For an n-gram hw with adjusted count a, and context h with sum S and backoff
mass gamma(h) (context.py):

    u(w | h) = (a - D_n(a)) / S                     initial probability
    p(w | h) = u(w | h) + gamma(h) p(w | h')        h' = h without its first token

The unigram level interpolates with the uniform distribution 1/|V|, |V|
counting <unk> but not <s>. KenLM's special cases: <s> is never predicted and
gets probability 1 (log10 0), so scoring it is harmless; <unk> has count 0, so
it gets only interpolated mass; an n-gram ending in </s> or <unk> never has a
backoff; the backoff of a context is gamma(h), that of any other n-gram 1.

Each order n >= 2 takes two joins: by context, to attach the context's
statistics to every successor (and, on the way, to emit the context's own
row with its backoff), and by suffix, to attach p(w | h'). A context or suffix
missing from the input (only possible when the input is not closed under
prefixes) leaves its n-grams out of the model; they are counted as orphans.
"""

import math

import apache_beam as beam

from ngramflow.schemas import START
from ngramflow.transforms.mkn.context import backoff_mass
from ngramflow.transforms.mkn.discount import Discounts, discounts_of
from ngramflow.transforms.mkn.grams import can_back_off, context_of, suffix_of

#: The log10 written for a probability or backoff of exactly 0 (ARPA's conventional "minus infinity").
LOG10_ZERO = -99.0


def initial_probability(count: int, stats: tuple, discounts: Discounts) -> float:
    total = stats[0]
    return (count - discounts.of(count)) / total if total else 0.0


def unigram_probability(token: str, count: int, stats: tuple, discounts: Discounts, vocab_size: int) -> float:
    if token == START:
        return 1.0
    return initial_probability(count, stats, discounts) + backoff_mass(stats, discounts) / vocab_size


def log10(value: float) -> float:
    return math.log10(value) if value > 0 else LOG10_ZERO


def log10_prob(prob: float) -> float:
    """KenLM clamps at 0: a sum of floats can exceed 1 by a rounding error."""
    return min(0.0, log10(prob))


def log10_backoff(ngram: str, stats: tuple | None, discounts: Discounts | None) -> float:
    if stats is None or not can_back_off(ngram):
        return 0.0
    return log10(backoff_mass(stats, discounts))


def model_row(ngram: str, order: int, count: int, prob: float, backoff: float | None) -> tuple:
    """A row of schemas.MKN_NGRAMS, as a tuple (cheaper to shuffle); ``backoff`` is None at the highest order."""
    return ngram, order, count, log10_prob(prob), backoff


ORPHANS, ROWS = "orphans", "rows"


class UnigramProbabilities(beam.PTransform):
    """Unigram adjusted rows -> (unigram, (count, p)), interpolated with the uniform distribution."""

    def __init__(self, unigram_stats, discount_table):
        super().__init__()
        self.unigram_stats, self.discount_table = unigram_stats, discount_table

    def expand(self, unigrams):
        def probability(row, stats, table):
            ngram, _order, count, _origin = row
            vocab_size = table[1]["ngrams"] - 1
            return ngram, (count, unigram_probability(ngram, count, stats, discounts_of(table[1]), vocab_size))

        return unigrams | "Unigram probability" >> beam.Map(
            probability,
            stats=beam.pvalue.AsSingleton(self.unigram_stats | "Unigram context" >> beam.Values()),
            table=self.discount_table)


class JoinContext(beam.DoFn):
    """Per context h of order n: h's own model row (with its backoff) and, per successor, its initial probability."""

    def __init__(self, order: int):
        super().__init__()
        self.order = order

    def process(self, element, table):
        context, grouped = element
        stats = next(iter(grouped["stats"]), None)
        own = next(iter(grouped["context"]), None)
        discounts = discounts_of(table[self.order])
        if own is not None:
            count, prob = own
            yield beam.pvalue.TaggedOutput(
                ROWS, model_row(context, self.order - 1, count, prob, log10_backoff(context, stats, discounts)))
        if stats is None:
            return
        if own is None:
            yield beam.pvalue.TaggedOutput(ORPHANS, (self.order, sum(1 for _ in grouped["successors"])))
            return
        gamma = backoff_mass(stats, discounts)
        for ngram, count in grouped["successors"]:
            yield suffix_of(ngram), (ngram, count, initial_probability(count, stats, discounts), gamma)


class JoinSuffix(beam.DoFn):
    """Per suffix h'w of order n-1: p(w | h) = u(w | h) + gamma(h) p(w | h') for every n-gram ending in it."""

    def __init__(self, order: int):
        super().__init__()
        self.order = order

    def process(self, element):
        _suffix, grouped = element
        lower = next(iter(grouped["lower"]), None)
        if lower is None:
            yield beam.pvalue.TaggedOutput(ORPHANS, (self.order, sum(1 for _ in grouped["grams"])))
            return
        lower_prob = lower[1]
        for ngram, count, initial, gamma in grouped["grams"]:
            yield ngram, (count, initial + gamma * lower_prob)


class InterpolateOrder(beam.PTransform):
    """Probabilities of order n-1 and adjusted rows of order n -> probabilities of order n.

    Returns (probabilities of order n, model rows of order n-1, orphan counts).
    """

    def __init__(self, order: int, context_stats, discount_table):
        super().__init__()
        self.order, self.context_stats, self.discount_table = order, context_stats, discount_table

    def expand(self, lower_and_adjusted):
        lower, adjusted = lower_and_adjusted
        by_context = (
            {
                "stats": self.context_stats,
                "context": lower,
                "successors": adjusted | "Successor by context" >> beam.MapTuple(
                    lambda ngram, _order, count, _origin: (context_of(ngram), (ngram, count))),
            }
            | "Join by context" >> beam.CoGroupByKey()
            | "Initial probabilities" >> beam.ParDo(JoinContext(self.order), table=self.discount_table)
            .with_outputs(ROWS, ORPHANS, main="grams")
        )
        by_suffix = (
            {"lower": lower, "grams": by_context.grams}
            | "Join by suffix" >> beam.CoGroupByKey()
            | "Interpolate" >> beam.ParDo(JoinSuffix(self.order)).with_outputs(ORPHANS, main="probs")
        )
        orphans = (by_context[ORPHANS], by_suffix[ORPHANS]) | "Orphans" >> beam.Flatten()
        return by_suffix.probs, by_context[ROWS], orphans
