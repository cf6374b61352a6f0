"""``ngramflow query DATASET SUBCOMMAND``: look-ups, series, continuations, model scores and SQL.

Every subcommand opens the dataset read-only through DuckDB, in this process
(query/dataset.py registers the views). Results go to standard output as an
aligned table, CSV or JSON; notes about the answer (an order the dataset does
not have, a chart written) go to standard error.
"""

import argparse
import functools
import os
import sys
import threading

from ngramflow.errors import RunFailed, UserError
from ngramflow.query.result_format import FORMATS, write_result
from ngramflow.schemas import MAX_ORDER, YEAR_MAX, YEAR_MIN

#: The most continuations ``next --top`` shows: far more than a prefix has in practice, and a number
#: DuckDB's LIMIT takes (it overflows past 2**63).
MAX_TOP = 1_000_000_000
#: The SQL that ``query sql`` runs: what DuckDB parses as a SELECT statement.
READ_STATEMENTS = "SELECT, WITH, VALUES, DESCRIBE, SHOW, SUMMARIZE, PIVOT ... IN (...)"


def _duckdb_message(err: Exception) -> str:
    """DuckDB's message without the excerpt of the query it appends after a blank line."""
    return " ".join(str(err).split("\n\n")[0].split())


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
    """Run a subcommand; what can go wrong outside the user's control ends in one line too."""

    @functools.wraps(handler)
    def run(args):
        import duckdb

        try:
            return _interruptible(handler, args)
        except duckdb.Error as err:  # a damaged or truncated file
            raise RunFailed(f"could not read {args.dataset}: {_duckdb_message(err)}") from None
        except BrokenPipeError:  # `ngramflow query ... | head` stopped reading: not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    return run


def _open(args):
    from ngramflow.query.dataset import Dataset

    return Dataset(args.dataset)


def _orders(ds) -> str:
    return ", ".join(map(str, ds.orders)) or "none"


def _ngrams(ds, typed: list[str]):
    """The n-grams to look up, each once, with a note for any order the dataset lacks."""
    from ngramflow.query.lookups import parse_ngram

    ngrams = list({ng.text: ng for ng in (parse_ngram(t, ds.lowercase) for t in typed)}.values())
    for order in sorted({ng.order for ng in ngrams} - set(ds.orders)):
        _note(f"{ds.path} has no {order}-grams (its orders: {_orders(ds)}), so every {order}-gram counts 0")
    return ngrams


def _count(args) -> int:
    from ngramflow.query.lookups import COUNT_COLUMNS, count

    ds = _open(args)
    ngrams = _ngrams(ds, args.ngrams)
    con = ds.connect()
    rows = [count(con, ds.ngrams_of_order(ng.order), ng, args.ignore_case, ds.keep_years) for ng in ngrams]
    write_result(COUNT_COLUMNS + (["variants"] if args.ignore_case else []), rows, args.format)
    return 0


def _series(args) -> int:
    from ngramflow.query import series_plot, year_series
    from ngramflow.query.lookups import year_totals, yearly_counts

    if args.plot:
        series_plot.check_target(args.plot)
    ds = _open(args)
    ds.require_years()
    if args.normalize:
        ds.require_totalcounts()
    ngrams = _ngrams(ds, args.ngrams)
    con = ds.connect()
    counts = [yearly_counts(con, ds.ngrams_of_order(ng.order), ng, args.ignore_case) for ng in ngrams]
    years = year_series.year_span(counts)
    columns = [year_series.values(c, years) for c in counts]
    if args.normalize:
        totals = year_totals(con, ds.table("totalcounts"))
        columns = [year_series.normalised(c, years, totals) for c in columns]
    columns = [year_series.smoothed(c, args.smooth) for c in columns]
    labels = [ng.text for ng in ngrams]
    write_result(["year"] + labels, zip(years, *columns), args.format)
    if not years:
        _note(f"none of these n-grams occurs in {ds.path}" + ("; no chart written" if args.plot else ""))
    elif args.plot:
        series_plot.plot(args.plot, years, dict(zip(labels, columns)), args.normalize, args.smooth)
        _note(f"chart written to {args.plot}")
    return 0


def _next(args) -> int:
    from ngramflow.query.lookups import continuations, parse_ngram

    ds = _open(args)
    prefix = parse_ngram(" ".join(args.prefix), ds.lowercase)
    if prefix.order >= MAX_ORDER:
        raise UserError(f"a prefix has at most {MAX_ORDER - 1} tokens: n-grams have at most {MAX_ORDER}")
    rows = continuations(ds.connect(), ds.ngrams_of_order(prefix.order + 1), prefix, args.top)
    write_result(["next", "match_count", "share"], rows, args.format)
    if prefix.order + 1 not in ds.orders:
        _note(f"{ds.path} has no {prefix.order + 1}-grams (its orders: {_orders(ds)}), so no continuations")
    elif not rows:
        _note(f"no {prefix.order + 1}-gram of {ds.path} starts with '{prefix.text}'")
    return 0


def _score(args) -> int:
    from ngramflow.query.lm_score import score

    ds = _open(args)
    order = ds.require_model()
    results = score(ds.connect(), ds.table("mkn_ngrams"), order, args.sentences, ds.lowercase)
    summary = (["sentence", "words", "oov", "log10_prob", "perplexity"],
               [(r.sentence, len(r.words) - 1, r.oov, r.log10_prob, r.perplexity) for r in results])
    if not args.verbose:
        write_result(*summary, args.format)
        return 0
    write_result(["#", "word", "token", "ngram", "log10_prob"],
                 [(i, w.word, w.token, w.ngram, w.log10_prob) for i, r in enumerate(results, 1) for w in r.words],
                 args.format)
    if args.format == "table":
        print()
        write_result(["#"] + summary[0], [(i, *row) for i, row in enumerate(summary[1], 1)], "table")
    return 0


def _reads_only(con, query: str) -> None:
    """Refuse statements other than SELECT: the sandbox lets the connection reach the dataset's files, and
    COPY TO, EXPORT, ATTACH (also inside EXPLAIN ANALYZE or a PIVOT's MULTI) could change them."""
    for statement in con.extract_statements(query):
        if statement.type.name != "SELECT":
            raise UserError(f"SQL: only statements that read run here ({READ_STATEMENTS}), "
                            f"not {statement.type.name}")


def _sql(args) -> int:
    import duckdb

    con = _open(args).connect(views=True)
    try:  # the query's errors are the user's; the dataset's were reported by connect
        _reads_only(con, args.query)
        cursor = con.execute(args.query)
        columns = None if cursor.description is None else [d[0] for d in cursor.description]
        if columns is not None:
            write_result(columns, (row for batch in iter(lambda: cursor.fetchmany(10_000), []) for row in batch),
                         args.format)
    except duckdb.Error as err:
        sandbox = isinstance(err, duckdb.PermissionException)
        raise UserError(f"SQL: {_duckdb_message(err)}"
                        + (f" (SQL reaches only the files of {args.dataset})" if sandbox else "")) from None
    return 0


def _whole_number(low: int, high: int, meaning: str):
    """An argparse type: a whole number from low to high, or a usage error that says what the option means."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{meaning}, a whole number from {low} to {high:,}; got {text!r}")
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
    s.add_argument("--smooth", type=_whole_number(0, YEAR_MAX - YEAR_MIN, "the years on each side"), default=0,
                   metavar="K",
                   help="the mean of each year and the K years either side, as the Ngram Viewer's smoothing "
                        f"(0 to {YEAR_MAX - YEAR_MIN}; default: 0, none)")
    s.add_argument("--ignore-case", action="store_true", help=ignore_case)
    s.add_argument("--plot", metavar="FILE.png", help="also draw the series as a chart in this PNG file")
    _with_format(s)

    n = _subcommand(q, "next", _next, "the most frequent continuations of a prefix, with counts and shares",
                    "The tokens that follow PREFIX in the n-grams one order longer, by match count, "
                    "with each one's share of all of PREFIX's continuations.")
    n.add_argument("prefix", nargs="+", metavar="PREFIX", help="one to four tokens")
    n.add_argument("--top", type=_whole_number(1, MAX_TOP, "how many continuations to show"), default=10,
                   metavar="K", help=f"show the K most frequent (1 to {MAX_TOP:,}; default: 10)")
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
