"""The Python API: a dataset opened for questions, each answered as an Arrow table.

``ngramflow.open_dataset(DIR)`` returns a DatasetQueries. ``ngramflow query`` calls the same methods and
only prints what they return, so a notebook and the command line give the same answers, with the same
sandbox (DuckDB reads the dataset's files and no other; SQL only reads) and the same errors: a mistake
(no such dataset, a model it lacks, SQL that writes) raises UserError, a file DuckDB cannot read
RunFailed, each with a one-line message. Notes about an answer (an order the dataset lacks, a prefix
nothing follows) go to ``note``: a QueryNote warning, unless the caller passes another function.
"""

import functools
import os
import warnings
from collections.abc import Callable

import duckdb
import pyarrow as pa

from ngramflow import schemas
from ngramflow.errors import RunFailed, UserError
from ngramflow.query import lm_score, lookups, year_series
from ngramflow.query.dataset import Dataset
from ngramflow.query.limits import DEFAULT_TOP, READ_STATEMENTS, SMOOTH, TOP

#: The columns of each answer. A count's types are the dataset's, nullable: an absent n-gram has no years.
COUNT = pa.schema([schemas.NGRAMS.field(c).with_nullable(True) for c in lookups.COUNT_COLUMNS])
VARIANTS = pa.field("variants", pa.int64())  # a count with ignore_case: the case variants summed
NEXT = pa.schema([("next", pa.string()), ("match_count", pa.int64()), ("share", pa.float64())])
SCORE = pa.schema([("sentence", pa.string()), ("words", pa.int64()), ("oov", pa.int64()),
                   ("log10_prob", pa.float64()), ("perplexity", pa.float64())])
SCORE_WORDS = pa.schema([("#", pa.int64()), ("word", pa.string()), ("token", pa.string()), ("ngram", pa.string()),
                         ("log10_prob", pa.float64())])
YEAR = schemas.TOTALCOUNTS.field("year")
#: Rows per Arrow batch of an SQL result: small enough that printing the first rows of a large result
#: converts little, large enough that a whole result is not thousands of chunks.
SQL_BATCH_ROWS = 10_000


class QueryNote(UserWarning):
    """A note about an answer: an n-gram order the dataset lacks, a prefix nothing follows."""


def _warn(text: str) -> None:
    warnings.warn(text, QueryNote, stacklevel=2)


def duckdb_message(err: Exception) -> str:
    """DuckDB's message without the excerpt of the query it appends after a blank line."""
    return " ".join(str(err).split("\n\n")[0].split())


def _table(schema: pa.Schema, rows: list[tuple]) -> pa.Table:
    columns = list(zip(*rows)) or [()] * len(schema)
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)


def _strings(values: tuple, example: str) -> list[str]:
    """The n-grams or sentences of a call; a list passed whole is the likely mistake."""
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"pass each as a string argument of its own, e.g. {example}")
    return list(values)


def _reads_only(con, query: str) -> None:
    """Refuse statements other than SELECT: the sandbox lets the connection reach the dataset's files, and
    COPY TO, EXPORT, ATTACH (also inside EXPLAIN ANALYZE or a PIVOT's MULTI) could change them."""
    for statement in con.extract_statements(query):
        if statement.type.name != "SELECT":
            raise UserError(f"SQL: only statements that read run here ({READ_STATEMENTS}), "
                            f"not {statement.type.name}")


def _reads(method):
    """A file of the dataset DuckDB cannot read (damaged, truncated) fails the call with one line."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except duckdb.Error as err:
            raise RunFailed(f"could not read {self.path}: {duckdb_message(err)}") from None

    return call


class DatasetQueries:
    """A complete local dataset written by ``ngramflow import``, opened for queries.

    Every answer is a ``pyarrow.Table``; ``.to_pandas()`` makes it a pandas DataFrame.
    The dataset's manifest and file list are read when it is opened (and by ``sql`` when it first runs):
    open it again after importing into the same directory.
    """

    def __init__(self, path: str | os.PathLike, note: Callable[[str], None] = _warn):
        self._dataset = Dataset(os.fspath(path))
        self._note = note

    @property
    def path(self) -> str:
        return self._dataset.path

    @property
    def orders(self) -> list[int]:
        """The n-gram orders the dataset has."""
        return self._dataset.orders

    def __repr__(self) -> str:
        return f"<ngramflow dataset {self.path!r}, orders {self.orders}>"

    @functools.cached_property
    def _lookups(self) -> duckdb.DuckDBPyConnection:
        """The connection of the look-ups: without views, which read a footer of every file (Dataset.connect)."""
        return self._dataset.connect()

    @functools.cached_property
    def _views(self) -> duckdb.DuckDBPyConnection:
        return self._dataset.connect(views=True)

    def _source(self, ngram: lookups.Ngram, ignore_case: bool) -> str | None:
        """The files that can hold NGRAM: the one part file of its range, or all of its order when case
        variants, which lie anywhere, count too."""
        return self._dataset.ngrams_of_order(ngram.order, *(() if ignore_case else ngram.exact))

    def _ngrams(self, typed: tuple) -> list[lookups.Ngram]:
        """The n-grams to look up, each once, with a note for any order the dataset lacks."""
        ds = self._dataset
        parsed = (lookups.parse_ngram(t, ds.lowercase) for t in _strings(typed, "count('a', 'burnt toast')"))
        ngrams = list({ng.text: ng for ng in parsed}.values())
        for order in sorted({ng.order for ng in ngrams} - set(ds.orders)):
            self._note(f"{ds.path} has no {order}-grams (its orders: {self._orders()}), so every {order}-gram "
                       "counts 0")
        return ngrams

    def _orders(self) -> str:
        return ", ".join(map(str, self.orders)) or "none"

    @_reads
    def count(self, *ngrams: str, ignore_case: bool = False) -> pa.Table:
        """Per n-gram: match and volume counts, first and last year, years with a row (0 and nulls when absent).

        An n-gram is its tokens separated by spaces ("burnt toast"). ``ignore_case`` sums the case variants
        (a ``variants`` column; ``years`` only when the dataset has per-year series) by scanning the
        order's files instead of a point look-up.
        """
        ds = self._dataset
        rows = [lookups.count(self._lookups, self._source(ng, ignore_case), ng, ignore_case, ds.keep_years)
                for ng in self._ngrams(ngrams)]
        return _table(COUNT.append(VARIANTS) if ignore_case else COUNT, rows)

    @_reads
    def series(self, *ngrams: str, normalize: bool = False, smooth: int = 0, ignore_case: bool = False) -> pa.Table:
        """Match counts for every year from the first to the last in which any of the n-grams occurs: a
        ``year`` column and one column per n-gram (0 in a year without a row).

        ``normalize`` divides by the year's total match count (null where the totals lack the year), as the
        Ngram Viewer does; ``smooth=K`` replaces each year by the mean of it and the K years either side.
        Needs an import with ``--keep-years``; ``normalize`` also Google's totalcounts file.
        """
        SMOOTH.check("smooth", smooth)
        ds = self._dataset
        ds.require_years()
        if normalize:
            ds.require_totalcounts()
        ngrams = self._ngrams(ngrams)
        counts = [lookups.yearly_counts(self._lookups, self._source(ng, ignore_case), ng, ignore_case)
                  for ng in ngrams]
        years = year_series.year_span(counts)
        columns = [year_series.values(c, years) for c in counts]
        if normalize:
            totals = lookups.year_totals(self._lookups, ds.table("totalcounts"))
            columns = [year_series.normalised(c, years, totals) for c in columns]
        columns = [year_series.smoothed(c, smooth) for c in columns]
        if not years:
            self._note(f"none of these n-grams occurs in {ds.path}")
        kind = pa.float64() if normalize or smooth else pa.int64()
        # From arrays, not a dict: an n-gram may be called "year" too.
        return pa.Table.from_arrays([pa.array(years, YEAR.type)] + [pa.array(c, kind) for c in columns],
                                    names=[YEAR.name] + [ng.text for ng in ngrams])

    @_reads
    def next(self, prefix: str, top: int = DEFAULT_TOP) -> pa.Table:
        """The ``top`` most frequent tokens that follow ``prefix`` (one to four tokens) in the n-grams one
        token longer, with their match counts and their shares of all of the prefix's continuations."""
        TOP.check("top", top)
        ds = self._dataset
        prefix = lookups.parse_ngram(*_strings((prefix,), "next('burnt', top=5)"), ds.lowercase)
        if prefix.order >= schemas.MAX_ORDER:
            raise UserError(f"a prefix has at most {schemas.MAX_ORDER - 1} tokens: n-grams have at most "
                            f"{schemas.MAX_ORDER}")
        order = prefix.order + 1
        rows = lookups.continuations(self._lookups, ds.ngrams_of_order(order, *prefix.continuing), prefix, top)
        if order not in ds.orders:
            self._note(f"{ds.path} has no {order}-grams (its orders: {self._orders()}), so no continuations")
        elif not rows:
            self._note(f"no {order}-gram of {ds.path} starts with '{prefix.text}'")
        return _table(NEXT, rows)

    @_reads
    def score(self, *sentences: str, per_word: bool = False) -> pa.Table:
        """Per sentence, the log10 probability and perplexity under the dataset's MKN model (words: how many,
        oov: how many the model lacks, scored as <unk>); ``per_word``: one row per word instead, with the
        sentence's number (``#``, from 1), the model's token, the longest n-gram of the model it used and
        its log10 probability."""
        ds = self._dataset
        order = ds.require_model()
        sentences = _strings(sentences, "score('a sentence', 'another one')")
        results = lm_score.score(self._lookups, ds.table("mkn_ngrams"), order, sentences, ds.lowercase)
        if per_word:
            return _table(SCORE_WORDS, [(i, w.word, w.token, w.ngram, w.log10_prob)
                                        for i, r in enumerate(results, 1) for w in r.words])
        return _table(SCORE, [(r.sentence, len(r.words) - 1, r.oov, r.log10_prob, r.perplexity) for r in results])

    def sql(self, query: str) -> pa.Table:
        """The result of SQL that reads, over the views ``ngrams``, ``vocabulary``, ``rejects`` and, when the
        dataset has them, ``totalcounts``, ``mkn_ngrams``, ``mkn_contexts``, ``mkn_discounts``."""
        return self.sql_batches(query).read_all()

    @_reads
    def sql_batches(self, query: str) -> pa.RecordBatchReader:
        """``sql``'s result as it is computed, batch by batch: for results too large to hold in memory."""
        cursor = self._views.cursor()  # a result of its own: a reader left half read holds up no other query
        try:
            _reads_only(cursor, query)
            relation = cursor.sql(query)
            if relation is None:  # no statement at all: a result without columns
                return pa.RecordBatchReader.from_batches(pa.schema([]), [])
            result = relation.arrow(SQL_BATCH_ROWS)
        except duckdb.Error as err:
            raise self._sql_error(err) from None
        return pa.RecordBatchReader.from_batches(result.schema, self._batches(result))

    def _sql_error(self, err: Exception) -> UserError:
        sandbox = isinstance(err, duckdb.PermissionException)
        return UserError(f"SQL: {duckdb_message(err)}"
                         + (f" (SQL reaches only the files of {self.path})" if sandbox else ""))

    def _batches(self, result: pa.RecordBatchReader):
        """The batches of a result. DuckDB runs the query as they are read, and what fails then (a value
        that does not cast) is the query's mistake too; Arrow hands it on as an OSError with DuckDB's
        message."""
        while True:
            try:
                batch = result.read_next_batch()
            except StopIteration:
                return
            except OSError as err:
                raise self._sql_error(err) from None
            yield batch
