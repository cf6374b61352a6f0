"""Per-year series as the Ngram Viewer shows them: every year of a range, normalised, smoothed."""


def year_span(series: list[dict[int, int]]) -> range:
    """From the first to the last year in which any of the series has a count."""
    years = [year for counts in series for year in counts]
    return range(min(years), max(years) + 1) if years else range(0)


def values(counts: dict[int, int], years: range) -> list[int]:
    """A count for every year; a year without a row is a year the n-gram was not seen."""
    return [counts.get(year, 0) for year in years]


def normalised(counts: list[int], years: range, totals: dict[int, int]) -> list[float | None]:
    """Each count as a share of its year's total match count; None where the totals lack the year."""
    return [count / totals[year] if totals.get(year) else None for count, year in zip(counts, years)]


def smoothed(series: list, window: int) -> list:
    """The Ngram Viewer's smoothing: the mean of the years within ``window`` of each year.

    At the ends of the range the window is cut short, and years without a value
    (None) are left out of the mean rather than counted as zero.
    """
    if window == 0:
        return series
    out = []
    for i in range(len(series)):
        known = [v for v in series[max(0, i - window):i + window + 1] if v is not None]
        out.append(sum(known) / len(known) if known else None)
    return out
