"""Row-level filters, as pure functions: POS policy, case folding, year window.

They run on each parsed row *before* aggregation. The minimum-count filter is
not here on purpose: Google's threshold (and ours) applies to an n-gram's total
over all kept years, so it runs after aggregation (see transforms/counts.py).
"""

import re
from dataclasses import dataclass

from schemas import END, START

POS_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", "X", ".")
_TAGS = "|".join(re.escape(t) for t in POS_TAGS)
# `burnt_VERB` (a tagged word) or `_NOUN_` (a wildcard standing for any noun).
_TAGGED = re.compile(rf"(?P<word>.+)(?P<tag>_(?:{_TAGS}))|_(?:{_TAGS})_")
BOUNDARY_TOKENS = frozenset({START, END})


def is_pos_tagged(token: str) -> bool:
    return token not in BOUNDARY_TOKENS and _TAGGED.fullmatch(token) is not None


def fold_case(token: str) -> str:
    """Lower-case a token's word, never its POS tag or a boundary/wildcard token."""
    if token in BOUNDARY_TOKENS:
        return token
    tagged = _TAGGED.fullmatch(token)
    if tagged is None:
        return token.lower()
    if tagged["word"] is None:  # a wildcard such as _NOUN_
        return token
    return tagged["word"].lower() + tagged["tag"]


@dataclass(frozen=True)
class RowPolicy:
    """What to keep of each row, and under which key to count it.

    pos: "drop" removes n-grams with any POS-tagged token (the untagged rows
    already include those occurrences, so keeping both double-counts);
    "keep" keeps them as n-grams of their own.
    lowercase: fold case so that case variants are counted as one n-gram.
    year_min/year_max: inclusive window applied to year rows before summing.
    """

    pos: str = "drop"
    lowercase: bool = False
    year_min: int | None = None
    year_max: int | None = None

    def key(self, tokens: list[str]) -> str | None:
        """The n-gram's output key, or None when the POS policy drops it."""
        if self.pos == "drop" and any(is_pos_tagged(t) for t in tokens):
            return None
        if self.lowercase:
            tokens = [fold_case(t) for t in tokens]
        return " ".join(tokens)

    def years(self, series):
        """The (year, match, volume) rows inside the year window."""
        lo, hi = self.year_min, self.year_max
        if lo is None and hi is None:
            return series
        return [row for row in series if (lo is None or row[0] >= lo) and (hi is None or row[0] <= hi)]
