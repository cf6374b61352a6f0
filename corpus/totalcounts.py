"""Per-year corpus totals ("totalcounts" files) as a ``schemas.TOTALCOUNTS`` table.

Both exports write whitespace-separated comma tuples, all on one line, with
leading whitespace: ``year,match_count,page_count,volume_count`` (the 2012
files, and Google's 2020 ``totalcounts-N`` files as published) or
``year,match_count,volume_count`` (page count null). Several files add up
year by year, which is how totals of corpora read together are formed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

import pyarrow as pa

from ngramflow.schemas import TOTALCOUNTS, YEAR_MAX, YEAR_MIN

_NAME = re.compile(r"googlebooks-.+-totalcounts-\d{8}\.txt|totalcounts-[1-5]")


class TotalcountsError(ValueError):
    """A totals file whose content is not what Google publishes."""


def is_totalcounts_file(path: str | os.PathLike) -> bool:
    """True for the names Google gives totals files (either export)."""
    return bool(_NAME.fullmatch(os.path.basename(os.fspath(path))))


def parse_totalcounts(text: str, source: str) -> dict[int, tuple[int, int | None, int]]:
    """year -> (match_count, page_count or None, volume_count) from one file's text."""
    totals: dict[int, tuple[int, int | None, int]] = {}
    width = None
    for position, token in enumerate(text.split(), start=1):
        fields = token.split(",")
        if len(fields) not in (3, 4) or not all(f.isdigit() for f in fields):
            raise TotalcountsError(
                f"{source}: tuple {position} is {token[:60]!r}; expected year,match,page,volume or year,match,volume"
            )
        if width is None:
            width = len(fields)
        elif len(fields) != width:
            raise TotalcountsError(f"{source}: tuple {position} has {len(fields)} fields, earlier ones {width}")
        year, match, *rest = map(int, fields)
        page, volume = (rest[0], rest[1]) if width == 4 else (None, rest[0])
        if not YEAR_MIN <= year <= YEAR_MAX:
            raise TotalcountsError(f"{source}: tuple {position} has year {year}, outside {YEAR_MIN}..{YEAR_MAX}")
        if year in totals:
            raise TotalcountsError(f"{source}: year {year} appears twice")
        totals[year] = (match, page, volume)
    if not totals:
        raise TotalcountsError(f"{source}: no year,count tuples found")
    return totals


def read_totalcounts(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> pa.Table:
    """Read one or more totals files into a TOTALCOUNTS table sorted by year.

    A year present in several files gets the sum of its counts; its page count
    is null unless every file that has the year gave one.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    merged: dict[int, list] = {}
    for path in paths:
        try:
            text = Path(path).read_text(encoding="ascii")
        except UnicodeDecodeError:
            raise TotalcountsError(f"{path}: not a plain-text totals file") from None
        for year, (match, page, volume) in parse_totalcounts(text, str(path)).items():
            if year in merged:
                total = merged[year]
                total[0] += match
                total[1] = None if total[1] is None or page is None else total[1] + page
                total[2] += volume
            else:
                merged[year] = [match, page, volume]
    if not merged:
        raise TotalcountsError("no totals files given")
    years = sorted(merged)
    return pa.table(
        {
            "year": pa.array(years, pa.int16()),
            "match_count": pa.array([merged[y][0] for y in years], pa.int64()),
            "page_count": pa.array([merged[y][1] for y in years], pa.int64()),
            "volume_count": pa.array([merged[y][2] for y in years], pa.int64()),
        },
        schema=TOTALCOUNTS,
    )
