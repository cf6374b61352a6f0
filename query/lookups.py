"""N-gram look-ups: totals, per-year series and continuations.

Every look-up reads only the files of the order it wants (``source``, from
Dataset.ngrams_of_order; None when the dataset lacks the order, which finds
nothing), and of those only the part files whose n-gram range can hold the key
range a look-up wants (``exact`` or ``continuing``), when the dataset records
ranges. Part files are sorted by n-gram, so an exact match or a prefix range
then reads only the row groups whose min/max statistics can hold it.
``--ignore-case`` cannot use either and scans the order's files.
"""

from dataclasses import dataclass

from ngramflow.errors import UserError
from ngramflow.schemas import MAX_ORDER, order_of
from ngramflow.transforms.policy import fold_case

COUNT_COLUMNS = ["ngram", "match_count", "volume_count", "first_year", "last_year", "years"]


@dataclass(frozen=True)
class Ngram:
    """An n-gram as the dataset stores it, and as the user typed it."""

    text: str
    typed: str

    @property
    def order(self) -> int:
        return order_of(self.text)

    @property
    def exact(self) -> tuple[str, str]:
        """The key range [lo, hi) that holds only this n-gram."""
        return self.text, self.text + "\0"

    @property
    def continuing(self) -> tuple[str, str]:
        """The key range of every n-gram that continues this one by a token: tokens are separated by a
        space (0x20) and strings compare byte by byte, so "TEXT x" for every x lies in [TEXT + ' ', TEXT + '!')."""
        return self.text + " ", self.text + "!"


def parse_ngram(typed: str, lowercase: bool) -> Ngram:
    """Tokens separated by any whitespace; case folded as the import folded it (``--lowercase``)."""
    tokens = typed.split()
    if not tokens:
        raise UserError("an n-gram needs at least one token")
    if len(tokens) > MAX_ORDER:
        raise UserError(f"'{typed}' has {len(tokens)} tokens; n-grams have at most {MAX_ORDER}")
    return Ngram(" ".join(fold_case(t) if lowercase else t for t in tokens), typed)


def count_query(source: str) -> str:
    """The query of an exact count; one parameter, the n-gram."""
    return f"SELECT {', '.join(COUNT_COLUMNS)} FROM {source} WHERE ngram = ?"


def count(con, source: str | None, ngram: Ngram, ignore_case: bool, keep_years: bool) -> tuple:
    """(ngram, match_count, volume_count, first_year, last_year, years[, variants]); zeros when absent."""
    if ignore_case:
        return _count_variants(con, source, ngram, keep_years)
    found = [] if source is None else con.execute(count_query(source), [ngram.text]).fetchall()
    return found[0] if found else (ngram.text, 0, 0, None, None, 0)


def _count_variants(con, source: str | None, ngram: Ngram, keep_years: bool) -> tuple:
    """The case variants summed; their distinct years are known only from the per-year series."""
    if source is None:
        return ngram.text, 0, 0, None, None, (0 if keep_years else None), 0
    years = "(SELECT count(DISTINCT y.year) FROM (SELECT unnest(year_series) AS y FROM variants))" \
        if keep_years else "NULL"
    return con.execute(f"""
        WITH variants AS (SELECT * FROM {source} WHERE lower(ngram) = lower(?))
        SELECT ?, coalesce(sum(match_count), 0), coalesce(sum(volume_count), 0), min(first_year),
               max(last_year), {years}, count(*)
        FROM variants""", [ngram.text, ngram.text]).fetchall()[0]


def yearly_counts(con, source: str | None, ngram: Ngram, ignore_case: bool) -> dict[int, int]:
    """year -> match count (case variants summed) from the per-year series."""
    if source is None:
        return {}
    match = "lower(ngram) = lower(?)" if ignore_case else "ngram = ?"
    return dict(con.execute(f"""
        SELECT y.year, sum(y.match_count) FROM (SELECT unnest(year_series) AS y FROM {source} WHERE {match})
        GROUP BY 1""", [ngram.text]).fetchall())


def year_totals(con, source: str) -> dict[int, int]:
    return dict(con.execute(f"SELECT year, match_count FROM {source}").fetchall())


def continuations(con, source: str | None, prefix: Ngram, top: int) -> list[tuple]:
    """(next token, match count, share of all continuations) of the (n+1)-grams starting with the prefix:
    the range Ngram.continuing, which the row-group statistics prune."""
    if source is None:
        return []
    return con.execute(f"""
        SELECT split_part(ngram, ' ', ?), match_count, match_count / sum(match_count) OVER ()
        FROM {source} WHERE ngram >= ? AND ngram < ?
        ORDER BY match_count DESC, ngram
        LIMIT ?""", [prefix.order + 1, *prefix.continuing, top]).fetchall()
