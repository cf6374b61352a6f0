"""Row policy: POS tags, case folding and the year window.

The policy is applied in transforms/collapse.py, before aggregation. The
minimum-count filter is not here on purpose: Google's threshold (and ours)
applies to an n-gram's total over all kept years, so it runs after aggregation
(transforms/total.py).
"""

import re
from dataclasses import dataclass

from ngramflow.schemas import END, START

POS_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", "X", ".")
_TAGS = "|".join(re.escape(t) for t in POS_TAGS)
# `burnt_VERB` (a tagged word) or `_NOUN_` (a wildcard standing for any noun).
_TAGGED_TOKEN = rf"(?P<word>[^ ]+)(?P<tag>_(?:{_TAGS}))|_(?:{_TAGS})_"
_TAGGED = re.compile(_TAGGED_TOKEN)
#: The same rule over a whole n-gram, for Arrow's (RE2) regex kernels.
TAGGED_IN_NGRAM = rf"(?:^| )(?:[^ ]+_(?:{_TAGS})|_(?:{_TAGS})_)(?: |$)"
BOUNDARY_TOKENS = frozenset({START, END})


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
