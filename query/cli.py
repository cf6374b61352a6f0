"""``ngramflow query DATASET SUBCOMMAND``: look-ups, series, continuations, model scores and SQL.

Every subcommand asks the Python API (query/api.py), which opens the dataset
read-only through DuckDB in this process, and only prints its answer: to
standard output as an aligned table, CSV or JSON; notes about the answer (an
order the dataset does not have, a chart written) go to standard error.
"""

import argparse
import functools
import os
import sys
import threading

from ngramflow.query.limits import DEFAULT_TOP, READ_STATEMENTS, SMOOTH, TOP, WholeNumbers
from ngramflow.query.result_format import FORMATS, write_arrow


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def _interruptible(handler, args):
    """Run the handler in a thread: DuckDB does not look at signals while it works, so the main thread
    waits for Ctrl+C instead and ends the process (queries only read, nothing is left half done)."""
    outcome = {}

    def work():
        try:
            outcome["code"] = handler(args)
        except BaseException as err:  # handed to the main thread, which reports it
            outcome["error"] = err

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        print("ngramflow: interrupted", file=sys.stderr, flush=True)
        os._exit(130)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["code"]


def _command(handler):
    """Run a subcommand: open the dataset through the Python API, whose notes are printed as they come."""

    @functools.wraps(handler)
    def run(args):
        from ngramflow.query.api import DatasetQueries  # here: building the command line loads no DuckDB

        try:
            return _interruptible(lambda a: handler(DatasetQueries(a.dataset, note=_note), a), args)
        except BrokenPipeError:  # `ngramflow query ... | head` stopped reading: not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    return run


def _count(ds, args) -> int:
    write_arrow(ds.count(*args.ngrams, ignore_case=args.ignore_case), args.format)
    return 0


def _series(ds, args) -> int:
    from ngramflow.query import series_plot

    if args.plot:
        series_plot.check_target(args.plot)
    table = ds.series(*args.ngrams, normalize=args.normalize, smooth=args.smooth, ignore_case=args.ignore_case)
    write_arrow(table, args.format)
    if args.plot and table.num_rows:
        years, *columns = (column.to_pylist() for column in table.columns)
        series_plot.plot(args.plot, years, dict(zip(table.column_names[1:], columns)), args.normalize, args.smooth)
        _note(f"chart written to {args.plot}")
    elif args.plot:
        _note("no chart written")
    return 0


def _next(ds, args) -> int:
    write_arrow(ds.next(" ".join(args.prefix), top=args.top), args.format)
    return 0


def _score(ds, args) -> int:
    write_arrow(ds.score(*args.sentences, per_word=args.verbose), args.format)
    if args.verbose and args.format == "table":  # people see the sentence totals under the words
        print()
        summary = ds.score(*args.sentences)
        write_arrow(summary.add_column(0, "#", [range(1, summary.num_rows + 1)]), "table")
    return 0


def _sql(ds, args) -> int:
    write_arrow(ds.sql_batches(args.query), args.format)
    return 0


def _whole_number(numbers: WholeNumbers):
    """An argparse type: one of ``numbers``, or a usage error that says what the option means."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if not numbers.holds(value):
            raise argparse.ArgumentTypeError(numbers.mistake(text))
        return value

    return parse


class _OneLineErrors(argparse.ArgumentParser):
    """A subcommand's parser whose usage mistakes are one line, as the subcommand's other mistakes are."""

    def error(self, message: str):
        self.exit(2, f"ngramflow: error: {message} (see '{self.prog} --help')\n")


def _with_format(parser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="an aligned table (the default), CSV with a header line, or a JSON array of objects")


def _subcommand(commands, name: str, handler, help: str, description: str | None = None):
    parser = commands.add_parser(name, help=help, description=description or help[0].upper() + help[1:] + ".")
    parser.set_defaults(handler=_command(handler))
    return parser


def add_query_command(sub) -> None:
    p = sub.add_parser(
        "query",
        help="look up n-grams, series, continuations and model scores in a dataset, or run SQL over it",
        description="Query a complete dataset in this process with DuckDB. SQL sees the views ngrams, "
                    "vocabulary, rejects, totalcounts (when the import had per-year totals) and mkn_ngrams, "
                    "mkn_contexts, mkn_discounts (when the dataset has an MKN model). DuckDB reads the dataset "
                    "and no other file; SQL runs only statements that read (SELECT and its kin).",
    )
    p.add_argument("dataset", metavar="DATASET", help="a dataset directory written by 'ngramflow import'")
    q = p.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND", parser_class=_OneLineErrors)
    ignore_case = "sum the n-gram's case variants (scans the order's files instead of a point look-up)"

    c = _subcommand(q, "count", _count, "total counts and first/last year of n-grams (0 when absent)")
    c.add_argument("ngrams", nargs="+", metavar="NGRAM", help="an n-gram, its tokens separated by spaces")
    c.add_argument("--ignore-case", action="store_true", help=ignore_case)
    _with_format(c)

    s = _subcommand(q, "series", _series, "per-year counts of n-grams, optionally normalised, smoothed and plotted",
                    "Per-year match counts, every year from the first to the last in which any of the "
                    "n-grams occurs (needs an import with --keep-years).")
    s.add_argument("ngrams", nargs="+", metavar="NGRAM", help="an n-gram, its tokens separated by spaces")
    s.add_argument("--normalize", action="store_true",
                   help="divide by the year's total match count from totalcounts, as the Ngram Viewer does")
    s.add_argument("--smooth", type=_whole_number(SMOOTH), default=0, metavar="K",
                   help="the mean of each year and the K years either side, as the Ngram Viewer's smoothing "
                        f"({SMOOTH.low} to {SMOOTH.high}; default: 0, none)")
    s.add_argument("--ignore-case", action="store_true", help=ignore_case)
    s.add_argument("--plot", metavar="FILE.png", help="also draw the series as a chart in this PNG file")
    _with_format(s)

    n = _subcommand(q, "next", _next, "the most frequent continuations of a prefix, with counts and shares",
                    "The tokens that follow PREFIX in the n-grams one order longer, by match count, "
                    "with each one's share of all of PREFIX's continuations.")
    n.add_argument("prefix", nargs="+", metavar="PREFIX", help="one to four tokens")
    n.add_argument("--top", type=_whole_number(TOP), default=DEFAULT_TOP, metavar="K",
                   help=f"show the K most frequent ({TOP.low} to {TOP.high:,}; default: {DEFAULT_TOP})")
    _with_format(n)

    m = _subcommand(q, "score", _score, "log10 probability and perplexity of sentences under the MKN model",
                    "Score sentences (tokens separated by spaces, as in the corpus) under the dataset's "
                    "MKN model, padded _START_ ... _END_ as it was estimated; words the model does not "
                    "know are scored as <unk>.")
    m.add_argument("sentences", nargs="+", metavar="SENTENCE")
    m.add_argument("--verbose", action="store_true",
                   help="one row per word: the model's token, the n-gram it matched and its log10 probability")
    _with_format(m)

    sql = _subcommand(q, "sql", _sql, "run SQL over the dataset's views",
                      f"Run SQL over the dataset's views. Only statements that read run ({READ_STATEMENTS}); "
                      "they can read the dataset's files and no other: no COPY, EXPORT, ATTACH, SET, PRAGMA, "
                      "INSTALL or LOAD.")
    sql.add_argument("query", metavar="SQL", help="e.g. \"SELECT * FROM ngrams WHERE \\\"order\\\" = 2 LIMIT 5\"")
    _with_format(sql)
