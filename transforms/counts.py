"""Per-n-gram totals: a compact accumulator and the CombineFn that merges them.

An accumulator is a tuple ``(match, volume, year_mask, series)``:
- ``year_mask`` has bit ``year - YEAR_MIN`` set for every year seen, so the
  number of distinct years, the first and the last year stay exact when case
  variants or several files contribute rows for the same year. It travels as
  little-endian bytes: as an int it is wider than the 64 bits Beam's int
  coders take;
- ``series`` is ``{year: (match, volume)}`` when per-year series are kept,
  else None.
"""

import apache_beam as beam

from schemas import YEAR_MAX, YEAR_MIN

_MASK_BYTES = (YEAR_MAX - YEAR_MIN) // 8 + 1
EMPTY = (0, 0, bytes(_MASK_BYTES), None)


def _mask_bytes(mask: int) -> bytes:
    return mask.to_bytes(_MASK_BYTES, "little")


def _mask_int(mask: bytes) -> int:
    return int.from_bytes(mask, "little")


def accumulate(series, keep_years: bool):
    """The accumulator of one parsed row's (year, match, volume) tuples."""
    match = volume = mask = 0
    per_year = {} if keep_years else None
    for year, m, v in series:
        match += m
        volume += v
        mask |= 1 << (year - YEAR_MIN)
        if per_year is not None:
            pm, pv = per_year.get(year, (0, 0))
            per_year[year] = (pm + m, pv + v)
    return match, volume, _mask_bytes(mask), per_year


def merge(a, b):
    series = a[3]
    if b[3] is not None:
        series = dict(series or {})
        for year, (m, v) in b[3].items():
            pm, pv = series.get(year, (0, 0))
            series[year] = (pm + m, pv + v)
    return a[0] + b[0], a[1] + b[1], _mask_bytes(_mask_int(a[2]) | _mask_int(b[2])), series


def to_row(ngram: str, acc) -> dict:
    """An output row of schemas.NGRAMS (or NGRAMS_WITH_YEARS)."""
    match, volume, mask, series = acc
    mask = _mask_int(mask)
    row = {
        "ngram": ngram,
        "order": ngram.count(" ") + 1,
        "match_count": match,
        "volume_count": volume,
        "first_year": YEAR_MIN + (mask & -mask).bit_length() - 1,
        "last_year": YEAR_MIN + mask.bit_length() - 1,
        "years": mask.bit_count(),
    }
    if series is not None:
        row["year_series"] = [
            {"year": y, "match_count": m, "volume_count": v} for y, (m, v) in sorted(series.items())
        ]
    return row


class SumNgramCounts(beam.CombineFn):
    """Merges partial accumulators of one n-gram (from several files or case variants).

    Inputs are already accumulators (each file collapses its own runs while
    reading), so adding an input is a merge; Beam lifts this combiner before
    the shuffle.
    """

    def create_accumulator(self):
        return EMPTY

    def add_input(self, accumulator, element):
        return merge(accumulator, element)

    def merge_accumulators(self, accumulators):
        total = EMPTY
        for acc in accumulators:
            total = merge(total, acc)
        return total

    def extract_output(self, accumulator):
        return accumulator
