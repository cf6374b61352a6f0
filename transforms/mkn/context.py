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

The unigram context '' has every unigram as successor: its sums are added up over the buckets
of the adjust pass instead (adjust.py), and its row is written once (unigram_context_table).
"""

import pyarrow as pa

from ngramflow import schemas
from ngramflow.schemas import layout
from ngramflow.transforms.checked import INT64_MAX, too_large
from ngramflow.transforms.mkn.adjust import ADJUSTED, SUCCESSOR_SUMS
from ngramflow.transforms.mkn.discount import DiscountError, Discounts, backoff_mass
from ngramflow.transforms.mkn.grams import can_back_off, context_of, suffix_of
from ngramflow.transforms.mkn.probability import PROBABILITIES, PROBABILITY, discounted, log10_or_zero, log10_prob
from ngramflow.transforms.mkn.tables import Index, Work, scan, write_rows


class ContextSumOverflow(DiscountError):
    """A context's adjusted_sum does not fit int64.

    The import checks each order's total, so only a context whose raw counts
    come within its continuation counts of 2**63 gets here. It carries the
    stage's marker, so `import --mkn-order` and `ngramflow mkn` both show it
    as one line.
    """


def check_sums(con, order: int, table: str) -> None:
    """ContextSumOverflow for a context of TABLE (context, total) whose sum does not fit the int64 column."""
    found = con.execute(f"SELECT context FROM {table} WHERE total > {INT64_MAX} LIMIT 1").fetchall()
    if found:
        raise ContextSumOverflow(too_large(f"the adjusted_sum of {order}-gram context {found[0][0]!r}"))


def context_columns(order: int) -> str:
    """The columns of schemas.MKN_CONTEXTS from a table (context, total, n1, n2, n3plus)."""
    return f"context, {order}::TINYINT AS \"order\", total::BIGINT AS adjusted_sum, n1, n2, n3plus"


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
    con = work.connect()
    con.execute(f"""CREATE TEMP TABLE successors AS
                    SELECT ngram, a, {context_of('ngram')} AS context
                    FROM {scan(con, index.files('adjusted', order, bucket), ADJUSTED)}""")
    con.execute(f"CREATE TEMP TABLE stats AS SELECT context, {SUCCESSOR_SUMS} FROM successors GROUP BY context")
    check_sums(con, order, "stats")
    write_rows(con, f"SELECT {context_columns(order)} FROM stats",
               out_root, layout.part(layout.by_order(layout.MKN_CONTEXTS, order), bucket))
    # Each order-(ORDER-1) model row with its sums as a context, where it is one: one join gives both the
    # model rows' backoffs and the gamma of the successors' contexts. Only contexts in the model have a
    # gamma: the successors of the others find none (orphans).
    gamma = backoff_mass("s.total", "s.n1", "s.n2", "s.n3plus", discounts)
    con.execute(f"""CREATE TEMP TABLE lower AS SELECT l.ngram, l.a, l.p, s.total, {gamma} AS gamma
                    FROM {scan(con, index.files(PROBABILITIES, order - 1, bucket), PROBABILITY)} l
                    LEFT JOIN stats s ON s.context = l.ngram""")
    write_rows(con, f"""SELECT ngram, {order - 1}::TINYINT AS "order", a AS adjusted_count,
                               {log10_prob('p')} AS log10_prob,
                               CASE WHEN total IS NULL OR NOT ({can_back_off('ngram')}) THEN 0.0
                                    ELSE {log10_or_zero('gamma')} END AS log10_backoff
                        FROM lower""",
               out_root, layout.part(layout.by_order(layout.MKN_NGRAMS, order - 1), bucket))
    successors = con.execute("SELECT count(*) FROM successors").fetchall()[0][0]
    written, rows = work.scatter(con, "weighted", order, f"""
        SELECT s.ngram, s.a, {discounted('s.a', 'g.total', discounts)} AS u, g.gamma
        FROM successors s JOIN (SELECT ngram AS context, total, gamma FROM lower WHERE total IS NOT NULL) g
             ON s.context = g.context""", suffix_of("ngram"))
    con.close()
    return written, successors - rows
