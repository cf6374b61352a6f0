"""The Google Books n-gram line formats, as pure functions.

2012 ("v2"): ``ngram TAB year TAB match TAB volume``: one row per n-gram-year.
2020 ("v3"): ``ngram TAB year,match,volume TAB year,match,volume ...``.
2009 ("v1"): ``ngram TAB year TAB match TAB page TAB volume``.

A parsed line is ``(tokens, series)``: the n-gram's tokens and a list of
``(year, match_count, volume_count)`` tuples. Anything that does not parse
raises :class:`Malformed` with a reason a person can act on.
"""

from ngramflow.schemas import MAX_ORDER, YEAR_MAX, YEAR_MIN
from ngramflow.transforms.checked import INT64_MAX

INPUT_FORMATS = ("2012", "2020", "2009")

#: Lines looked at before giving up on detecting a file's format.
DETECT_LINES = 1000


class Malformed(ValueError):
    """A line that is not a valid row; the message is the reject reason."""


def _count(text: str, what: str) -> int:
    """A count or year: ASCII digits, leading zeros allowed, padded by spaces or not.

    Nothing else is a number here, whatever its value: no sign ("-0" and "+5"
    are as malformed as "-5"), decimal point, exponent or hexadecimal.
    The native kernel (native/) hands every other spelling to this parser.
    """
    text = text.strip(" ")  # padding spaces are tolerated, as Arrow's CSV reader, used before, did
    if text.isascii() and text.isdigit():
        value = int(text)
        if value > INT64_MAX:
            raise Malformed(f"{what} too large: {text[:40]}")
        return value
    if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit():
        raise Malformed(f"negative {what}: {text}")
    raise Malformed(f"non-numeric {what}: {text[:40]!r}")


def _year(text: str) -> int:
    year = _count(text, "year")
    if not YEAR_MIN <= year <= YEAR_MAX:
        raise Malformed(f"year out of range {YEAR_MIN}-{YEAR_MAX}: {year}")
    return year


def split_ngram(ngram: str) -> list[str]:
    """Split an n-gram on single spaces; runs of spaces count as one separator.

    Only U+0020 separates tokens: other Unicode spaces (e.g. U+00A0) occur inside
    real tokens and must not split them.
    """
    tokens = [t for t in ngram.split(" ") if t]
    if not tokens:
        raise Malformed("empty n-gram")
    if len(tokens) > MAX_ORDER:
        raise Malformed(f"more than {MAX_ORDER} tokens: {len(tokens)}")
    return tokens


def _fields(line: str, expected: int, fmt: str) -> list[str]:
    fields = line.split("\t")
    if len(fields) != expected:
        raise Malformed(f"wrong field count for the {fmt} format: expected {expected}, got {len(fields)}")
    return fields


def parse_2012(line: str):
    ngram, year, match, volume = _fields(line, 4, "2012")
    return split_ngram(ngram), [(_year(year), _count(match, "match count"), _count(volume, "volume count"))]


def parse_2009(line: str):
    ngram, year, match, _page, volume = _fields(line, 5, "2009")
    _count(_page, "page count")
    return split_ngram(ngram), [(_year(year), _count(match, "match count"), _count(volume, "volume count"))]


def parse_2020(line: str):
    fields = line.split("\t")
    if len(fields) < 2:
        raise Malformed("wrong field count for the 2020 format: no year,match,volume tuples")
    series = []
    for item in fields[1:]:
        parts = item.split(",")
        if len(parts) != 3:
            raise Malformed(f"malformed year tuple (want year,match,volume): {item[:40]!r}")
        series.append((_year(parts[0]), _count(parts[1], "match count"), _count(parts[2], "volume count")))
    return split_ngram(fields[0]), series


PARSERS = {"2012": parse_2012, "2020": parse_2020, "2009": parse_2009}


def decode(raw: bytes) -> str:
    """The text of one line without its line ending; Malformed on invalid UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise Malformed(f"invalid UTF-8 at byte {err.start}") from None
    return text.rstrip("\r\n")


def detect_format(lines) -> str | None:
    """The format of the first of ``lines`` (bytes) that parses in one format.

    Returns None when none of the lines does. A 2020 row is recognised by the
    comma in its second field; 2012 and 2009 rows by their field counts.
    """
    for raw in lines:
        try:
            text = decode(raw)
        except Malformed:
            continue
        fields = text.split("\t")
        fmt = "2020" if len(fields) >= 2 and "," in fields[1] else {4: "2012", 5: "2009"}.get(len(fields))
        if fmt is None:
            continue
        try:
            PARSERS[fmt](text)
        except Malformed:
            continue
        return fmt
    return None
