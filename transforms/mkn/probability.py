"""Interpolated Modified Kneser-Ney probabilities, order by order.

For an n-gram hw with adjusted count a, and context h with sum S and backoff
mass gamma(h) (context.py):

    u(w | h) = (a - D_n(a)) / S                     initial probability
    p(w | h) = u(w | h) + gamma(h) p(w | h')        h' = h without its first token

The unigram level interpolates with the uniform distribution 1/|V|, |V|
counting <unk> but not <s>. KenLM's special cases: <s> is never predicted and
gets probability 1 (log10 0), so scoring it is harmless; <unk> has count 0, so
it gets only interpolated mass.

    unigram_bucket      one bucket of "adjusted" unigrams -> their "probabilities" (ngram, a, p), in
                        the same bucket (the unigram context's sums are global, a few numbers)
    interpolate_bucket  one bucket of order n's "weighted" rows (bucketed by suffix) and of order n-1's
                        "probabilities" -> order n's "probabilities" in the bucket of each n-gram, or
                        at the highest order its model rows. An n-gram whose suffix is missing from
                        the model is left out and counted (orphans).
"""

from ngramflow.schemas import START, layout
from ngramflow.transforms.mkn.adjust import ADJUSTED
from ngramflow.transforms.mkn.discount import Discounts, backoff_mass
from ngramflow.transforms.mkn.grams import suffix_of
from ngramflow.transforms.mkn.tables import Index, Work, double, scan, text, write_rows

#: The log10 written for a probability or backoff of exactly 0 (ARPA's conventional "minus infinity").
LOG10_ZERO = -99.0

PROBABILITIES = "probabilities"
PROBABILITY = {"ngram": "VARCHAR", "a": "BIGINT", "p": "DOUBLE"}
WEIGHTED = {"ngram": "VARCHAR", "a": "BIGINT", "u": "DOUBLE", "gamma": "DOUBLE"}


def log10_or_zero(value: str) -> str:
    return f"CASE WHEN {value} > 0 THEN log10({value}) ELSE {double(LOG10_ZERO)} END"


def log10_prob(prob: str) -> str:
    """KenLM clamps at 0: a sum of floats can exceed 1 by a rounding error."""
    return f"least(0.0::DOUBLE, {log10_or_zero(prob)})"


def discounted(count: str, total: str, discounts: Discounts) -> str:
    """u = (a - D(a)) / S as SQL (nothing is taken off a zero count; no mass at all under a zero sum)."""
    amount = (f"CASE WHEN {count} <= 0 THEN 0.0::DOUBLE WHEN {count} = 1 THEN {double(discounts.d1)} "
              f"WHEN {count} = 2 THEN {double(discounts.d2)} ELSE {double(discounts.d3plus)} END")
    return f"CASE WHEN {total} = 0 THEN 0.0::DOUBLE ELSE ({count} - {amount}) / {total}::DOUBLE END"


def highest_order_rows(query: str, order: int) -> str:
    """Model rows of the highest order (no backoff) from QUERY's (ngram, a, p)."""
    return (f"SELECT ngram, {order}::TINYINT AS \"order\", a AS adjusted_count, {log10_prob('p')} AS log10_prob, "
            f"NULL::DOUBLE AS log10_backoff FROM ({query})")


def _probabilities_out(con, work: Work, query: str, order: int, bucket: int, model_order: int,
                       out_root: str) -> tuple[list, int]:
    """Order ORDER's (ngram, a, p) rows: the next order's input, or the model rows of the highest order;
    returns the files of the next order's input and the rows."""
    if order < model_order:
        return work.scatter(con, PROBABILITIES, order, query, "ngram")
    return [], write_rows(con, highest_order_rows(query, order), out_root,
                          layout.part(layout.by_order(layout.MKN_NGRAMS, order), bucket))


def unigram_bucket(work: Work, index: Index, bucket: int, discounts: Discounts, stats: list[int],
                   vocab_size: int, model_order: int, out_root: str) -> list:
    """One bucket of unigrams -> their probabilities, interpolated with the uniform 1/|V|."""
    con = work.connect()
    total, n1, n2, n3plus = (f"{v}::HUGEINT" for v in stats)
    uniform = f"({backoff_mass(total, n1, n2, n3plus, discounts)}) / {vocab_size}::DOUBLE"
    query = f"""SELECT ngram, a, CASE WHEN ngram = {text(START)} THEN 1.0::DOUBLE
                                      ELSE {discounted('a', total, discounts)} + {uniform} END AS p
                FROM {scan(con, index.files('adjusted', 1, bucket), ADJUSTED)}"""
    written, _ = _probabilities_out(con, work, query, 1, bucket, model_order, out_root)
    con.close()
    return written


def interpolate_bucket(work: Work, index: Index, order: int, bucket: int, model_order: int,
                       out_root: str) -> tuple[list, int]:
    """One suffix bucket of order ORDER -> (files written, orphans)."""
    con = work.connect()
    con.execute(f"CREATE TEMP TABLE weighted AS SELECT *, {suffix_of('ngram')} AS suffix "
                f"FROM {scan(con, index.files('weighted', order, bucket), WEIGHTED)}")
    con.execute(f"CREATE TEMP TABLE lower AS SELECT ngram, p FROM "
                f"{scan(con, index.files(PROBABILITIES, order - 1, bucket), PROBABILITY)}")
    weighted = con.execute("SELECT count(*) FROM weighted").fetchall()[0][0]
    query = "SELECT w.ngram, w.a, w.u + w.gamma * l.p AS p FROM weighted w JOIN lower l ON w.suffix = l.ngram"
    written, rows = _probabilities_out(con, work, query, order, bucket, model_order, out_root)
    con.close()
    return written, weighted - rows
