"""A PNG chart of per-year series in the style of the Google Books Ngram Viewer.

One line per n-gram in the Viewer's colours, years along the bottom, a light
horizontal grid, no box, and the legend in the top left corner; shares are
shown as percentages, as the Viewer shows them.
"""

import os

from ngramflow.errors import UserError

#: The Viewer's line colours, in order (Google Charts' palette).
COLOURS = ("#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00")
SIZE_INCHES, DPI = (10, 5), 100


def check_target(path: str) -> None:
    if not path.lower().endswith(".png"):
        raise UserError(f"--plot writes a PNG image; name the file *.png, not {path}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"the folder of --plot {path} does not exist")


def plot(path: str, years: list[int], series: dict[str, list], share: bool, smoothing: int) -> None:
    """Write the chart of ``series`` (label -> one value or None per year) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")  # no display: render straight to the file
    from matplotlib import pyplot
    from matplotlib.ticker import PercentFormatter

    figure, axes = pyplot.subplots(figsize=SIZE_INCHES, dpi=DPI)
    scale = 100 if share else 1
    for i, (label, values) in enumerate(series.items()):
        axes.plot(list(years), [None if v is None else v * scale for v in values], label=label,
                  color=COLOURS[i % len(COLOURS)], linewidth=2)
    axes.set_xlabel("year")
    axes.set_ylabel("share of the year's match count" if share else "match count")
    if share:
        axes.yaxis.set_major_formatter(PercentFormatter(decimals=None))
    axes.set_ylim(bottom=0)
    if len(years) > 1:
        axes.set_xlim(years[0], years[-1])
    axes.grid(axis="y", color="#dddddd")
    axes.set_axisbelow(True)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.tick_params(axis="y", length=0)
    axes.legend(loc="upper left", frameon=False)
    if smoothing:
        axes.set_title(f"smoothing of {smoothing}", loc="right", fontsize=9, color="#666666")
    figure.tight_layout()
    figure.savefig(path, format="png")
    pyplot.close(figure)
