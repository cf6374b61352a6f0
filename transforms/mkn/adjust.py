"""Adjusted counts: what Kneser-Ney counts in place of raw counts.

a(w1..wn) is the raw count for the model's highest order and for n-grams that
begin with _START_ (nothing precedes a sentence start, so there is no left
context to count); for every other n-gram it is N1+(. w1..wn), the number of
distinct (n+1)-grams in the input whose suffix it is. KenLM gives the unigrams
<s> and <unk> the count 0.

Published counts are not raw text, so two cases KenLM never meets are handled
explicitly, and each is counted in the manifest:

- SUFFIX: an n-gram missing from the input but implied as the suffix of a
  longer one (e.g. the 1-gram files lack _END_, or only some files of an order
  were imported). Its continuation count is known exactly, so it is added.
- FLOOR: an n-gram of the input whose left extensions were all pruned away
  (Google publishes only totals >= 40). It did occur, after something, so it
  has at least one left extension: its count is that lower bound, 1.

Two passes:

    scatter_part   one input part file of order n -> "input" rows (ngram, raw) in the bucket of the
                   n-gram, and "extensions" (suffix, distinct n-grams) in the bucket of the suffix,
                   summed within the file first (its n-grams are sorted, so suffixes repeat). At the
                   model's highest order (above 1) a is the raw count, which the file holds: its rows go
                   straight to "adjusted", with the file's summary, and skip adjust_bucket
    adjust_bucket  one bucket of order n's "input" and "extensions" -> "adjusted" rows (ngram, a) in
                   the bucket of their context (order 1: of the n-gram), and the order's summary:
                   [n-grams, t1..t4, one count per origin] (+ the unigram context's sums at order 1)
"""

from ngramflow.schemas import RESERVED_TOKENS, START, UNK
from ngramflow.transforms.mkn.grams import context_of, starts_sentence, suffix_of
from ngramflow.transforms.mkn.tables import Index, Work, scan, text

INPUT, SUFFIX, FLOOR, RESERVED = "input", "suffix", "floor", "reserved"
ORIGINS = (INPUT, SUFFIX, FLOOR, RESERVED)

RAW = {"ngram": "VARCHAR", "raw": "BIGINT"}
EXTENSIONS = {"ngram": "VARCHAR", "extensions": "BIGINT"}
ADJUSTED = {"ngram": "VARCHAR", "a": "BIGINT"}

#: A context's sums over its successors' adjusted counts ``a``: the sum, N1, N2, N3+ (context.py).
SUCCESSOR_SUMS = ("coalesce(sum(a), 0) AS total, count(*) FILTER (a = 1) AS n1, count(*) FILTER (a = 2) AS n2, "
                  "count(*) FILTER (a >= 3) AS n3plus")


def scatter_part(work: Work, order: int, path: str, model_order: int) -> tuple[list, list | None]:
    """An input part file's (ngram, match_count) rows of ORDER -> (files written: its "input" and
    "extensions" buckets, or at the highest order its "adjusted" ones; the file's summary of the
    highest order, else None)."""
    con = work.connect()
    source = f"read_parquet('{path}', hive_partitioning = false)"
    summary = None
    if order == model_order > 1:
        # The import totals each n-gram once, in one part file, so the file's rows are the order's own.
        written, _ = work.scatter(con, "adjusted", order, f"SELECT ngram, match_count AS a FROM {source}",
                                  context_of("ngram"))
        summary = summary_of(con, f"(SELECT match_count AS a, {ORIGINS.index(INPUT)} AS origin FROM {source})")
    else:
        written, _ = work.scatter(con, "input", order, f"SELECT ngram, match_count AS raw FROM {source}", "ngram")
    if order > 1:
        written += work.scatter(
            con, "extensions", order - 1,
            f"SELECT {suffix_of('ngram')} AS ngram, count(*) AS extensions FROM {source} GROUP BY 1", "ngram")[0]
    con.close()
    return written, summary


def summary_of(con, table: str) -> list[int]:
    """An order's summary of TABLE's (a, origin) rows: [n-grams, t1..t4, one count per origin]."""
    counts = ", ".join([f"count(*) FILTER (a = {k})" for k in (1, 2, 3, 4)]
                       + [f"count(*) FILTER (origin = {i})" for i in range(len(ORIGINS))])
    return [int(v) for v in con.execute(f"SELECT count(*), {counts} FROM {table}").fetchall()[0]]


def adjusted_sql(order: int, model_order: int) -> str:
    """(a, origin index) of a joined row (raw: NULL when not in the input; extensions)."""
    listed = f"CASE WHEN raw IS NULL THEN {ORIGINS.index(RESERVED)} ELSE {ORIGINS.index(INPUT)} END"
    cases = [(f"ngram IN ({text(START)}, {text(UNK)})", "0", listed)] if order == 1 else []
    raw_only = starts_sentence("ngram") if order < model_order else "true"
    cases += [
        (raw_only, "coalesce(raw, 0)", listed),
        ("raw IS NULL", "extensions",
         f"CASE WHEN extensions > 0 THEN {ORIGINS.index(SUFFIX)} ELSE {ORIGINS.index(RESERVED)} END"),
        ("extensions = 0", "1", str(ORIGINS.index(FLOOR))),
        ("true", "extensions", str(ORIGINS.index(INPUT))),
    ]
    count = "CASE " + " ".join(f"WHEN {when} THEN {then}" for when, then, _ in cases) + " END"
    origin = "CASE " + " ".join(f"WHEN {when} THEN {then}" for when, _, then in cases) + " END"
    return f"{count} AS a, {origin} AS origin"


def adjust_bucket(work: Work, index: Index, order: int, bucket: int, model_order: int) -> tuple[list, list]:
    """One bucket of order ORDER -> ("adjusted" files written, the bucket's summary of the order)."""
    con = work.connect()
    # The import totals each n-gram once, so an input row is an n-gram's only one.
    raw = scan(con, index.files("input", order, bucket), RAW)
    if order == 1:
        # The reserved unigrams are always in the model, with no raw count unless the input has them.
        reserved = " UNION ALL ".join(f"SELECT {text(t)}, NULL::BIGINT" for t in RESERVED_TOKENS)
        raw = (f"(SELECT ngram, sum(raw) AS raw FROM (SELECT * FROM {raw} UNION ALL SELECT * FROM ({reserved}) "
               f"r(ngram, raw) WHERE {work.bucket_of('ngram')} = {bucket}) GROUP BY ngram)")
    con.execute(f"""
        CREATE TEMP TABLE adjusted AS
        WITH raw AS (SELECT * FROM {raw}),
             extensions AS (SELECT ngram, sum(extensions) AS extensions
                            FROM {scan(con, index.files("extensions", order, bucket), EXTENSIONS)} GROUP BY ngram),
             joined AS (SELECT coalesce(r.ngram, e.ngram) AS ngram, r.raw, coalesce(e.extensions, 0) AS extensions
                        FROM raw r FULL JOIN extensions e ON r.ngram = e.ngram)
        SELECT ngram, {adjusted_sql(order, model_order)} FROM joined""")
    key = "ngram" if order == 1 else context_of("ngram")
    written, _ = work.scatter(con, "adjusted", order, "SELECT ngram, a FROM adjusted", key)
    summary = summary_of(con, "adjusted")
    if order == 1:  # the unigram context '', whose successors are every unigram: summed over the buckets
        summary += [int(v) for v in con.execute(f"SELECT {SUCCESSOR_SUMS} FROM adjusted").fetchall()[0]]
    con.close()
    return written, summary
