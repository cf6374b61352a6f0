"""A complete dataset opened for reading: its manifest, and DuckDB views over its outputs.

Views (see schemas/ for their columns): ``ngrams``, ``vocabulary``, ``rejects``,
``totalcounts`` when the import had per-year totals, and ``mkn_ngrams``,
``mkn_contexts``, ``mkn_discounts`` when it has a complete MKN model. The
partitioned outputs are read with their ``order=N`` folders as a column, so a
filter on ``"order"`` scans only that order's files.

Only local directories are read, and a connection reads nothing else: DuckDB's
access to files is limited to the dataset directory and locked (see connect).
Nothing here imports Beam: a query's process starts in a fraction of a second.
"""

import bisect
import functools
import glob
import os

import duckdb
import pyarrow as pa

from ngramflow import schemas
from ngramflow.errors import UserError
from ngramflow.schemas import layout
from ngramflow.schemas.manifest import parse_manifest


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_parquet(files: list[str], partitioned: bool) -> str:
    """A table expression reading files listed by Dataset._files, with their "order" folder as a column if
    partitioned."""
    options = ", hive_partitioning = true, hive_types = {'order': 'TINYINT'}" if partitioned else ""
    return f"read_parquet([{', '.join(map(_sql_string, files))}]{options})"


def _first_line(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline().strip()


class Dataset:
    def __init__(self, path: str):
        self.path = path
        self.manifest = self._read_manifest()
        # Absolute: DuckDB's sandbox compares the paths a query reads with the allowed directory, as strings.
        self._root = os.path.abspath(path)
        # DuckDB expands *, ? and [...] in every path it is given, even in a list of files, and escaping
        # them as [*], [?], [[] (as glob.escape does) works unless the path also has a backslash, which
        # DuckDB's glob takes for a separator: it would read another directory or none.
        if "\\" in self._root and glob.escape(self._root) != self._root:
            raise UserError(f"DuckDB cannot read {path}: its path has a backslash and one of * ? [; "
                            "rename the directory or query it through a link without them")

    def _read_manifest(self) -> dict:
        path = self.path
        if "://" in path:
            raise UserError(f"query reads local datasets only; copy {path} to this machine first")
        if not os.path.exists(path):
            raise UserError(f"{path} does not exist")
        if not os.path.isdir(path):
            raise UserError(f"{path} is a file, not an ngramflow output directory")
        if not os.path.exists(os.path.join(path, layout.MANIFEST)):
            marker = os.path.join(path, layout.INCOMPLETE)
            if os.path.exists(marker):
                raise UserError(f"{path} is an incomplete dataset ({_first_line(marker)}); run the import again")
            raise UserError(f"{path} is not an ngramflow output directory (it has no {layout.MANIFEST})")
        with open(os.path.join(path, layout.MANIFEST), "rb") as fh:
            return parse_manifest(fh.read(), path)

    def file(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    @functools.cached_property
    def orders(self) -> list[int]:
        """The n-gram orders the dataset has."""
        return sorted(int(o) for o, stats in self.manifest["orders"].items() if stats["ngrams"])

    @property
    def keep_years(self) -> bool:
        return bool(self.manifest["options"].get("keep_years"))

    @property
    def lowercase(self) -> bool:
        return bool(self.manifest["options"].get("lowercase"))

    @functools.cached_property
    def has_totalcounts(self) -> bool:
        return os.path.exists(self.file(layout.TOTALCOUNTS))

    @property
    def model_order(self) -> int | None:
        section = self.manifest.get("mkn")
        return section["order"] if section else None

    def require_years(self) -> None:
        if not self.keep_years:
            raise UserError(f"{self.path} has no per-year series; import again with --keep-years to get them")

    def require_totalcounts(self) -> None:
        if not self.has_totalcounts:
            raise UserError(f"{self.path} has no per-year totals to normalise by; import again with Google's "
                            "totalcounts file among the inputs (e.g. googlebooks-eng-all-totalcounts-20120701.txt)")

    def require_model(self) -> int:
        if self.model_order is None:
            marker = self.file(layout.MKN_INCOMPLETE)
            state = f"its MKN model is incomplete ({_first_line(marker)})" if os.path.exists(marker) \
                else "it has no MKN model"
            raise UserError(f"cannot score with {self.path}: {state}; build one with "
                            f"'ngramflow mkn {self.path} --order N --overwrite'")
        return self.model_order

    def ngrams_of_order(self, order: int, lo: str | None = None, hi: str | None = None) -> str | None:
        """The n-grams of one order as a table expression that reads only ngrams/order=N/ (None: no such order).

        With a key range [lo, hi), and part files that are contiguous n-gram ranges (the manifest's
        "ranges"), only the part files that can hold a key of the range are read: one for a point
        look-up. None when no file can.
        """
        if order not in self.orders:
            return None
        ranges = self.manifest.get("ranges", {}).get(str(order))
        if lo is None or ranges is None:
            return _read_parquet(self._files(layout.parts(layout.ngrams_folder(order))), partitioned=False)
        # Ranges are disjoint and in n-gram order: their first and last n-grams are both sorted.
        start = bisect.bisect_left(ranges, lo, key=lambda r: r[2])
        stop = bisect.bisect_left(ranges, hi, key=lambda r: r[1])
        files = [glob.escape(os.path.join(self._root, name)) for name, _, _ in ranges[start:stop]]
        return _read_parquet(files, partitioned=False) if files else None

    def _files(self, pattern: str) -> list[str]:
        """The dataset's files that match ``pattern``, listed here so that only the dataset's own directory is
        globbed, each escaped to match only itself in DuckDB's glob."""
        return [glob.escape(f) for f in sorted(glob.glob(os.path.join(glob.escape(self._root), pattern)))]

    @functools.cached_property
    def _outputs(self) -> dict[str, tuple[str, pa.Schema, bool]]:
        """View name -> (the glob of its files, its schema, whether it is partitioned in order=N folders)."""
        outputs = {
            "ngrams": (layout.parts_of_every_order(layout.NGRAMS), schemas.ngrams_schema(self.keep_years), True),
            "vocabulary": (layout.parts(layout.VOCABULARY), schemas.VOCABULARY, False),
            "rejects": (layout.parts(layout.REJECTS), schemas.REJECTS, False),
        }
        if self.has_totalcounts:
            outputs["totalcounts"] = (layout.TOTALCOUNTS, schemas.TOTALCOUNTS, False)
        if self.model_order is not None:
            outputs["mkn_ngrams"] = (layout.parts_of_every_order(layout.MKN_NGRAMS), schemas.MKN_NGRAMS, True)
            outputs["mkn_contexts"] = (layout.parts_of_every_order(layout.MKN_CONTEXTS), schemas.MKN_CONTEXTS, True)
            outputs["mkn_discounts"] = (layout.MKN_DISCOUNTS, schemas.MKN_DISCOUNTS, False)
        return outputs

    def table(self, name: str) -> str:
        """An output (a view name) as a table expression; a filter on "order" skips the other orders' files."""
        pattern, _, partitioned = self._outputs[name]
        return _read_parquet(self._files(pattern), partitioned)

    def connect(self, views: bool = False) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection that can read the dataset and no other file, with a view per output
        of the dataset if asked.

        Creating a view reads a footer of its files (DuckDB learns the columns), so
        look-ups that read one order go without views.
        """
        con = duckdb.connect()
        # A query may look up several n-grams in the same files; read each footer once.
        con.execute("SET parquet_metadata_cache = true")
        self._sandbox(con)
        for name, (pattern, schema, partitioned) in (self._outputs if views else {}).items():
            files = self._files(pattern)
            if files:
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM {_read_parquet(files, partitioned)}")
            else:  # an output with no rows may have no files: an empty table keeps queries over it valid
                con.register(name, schema.empty_table())
        return con

    def _sandbox(self, con: duckdb.DuckDBPyConnection) -> None:
        """Limit the connection's files to the dataset, for good: with external access off, reading or
        writing anywhere else, ATTACH of a file, INSTALL and LOAD fail, and the locked configuration
        keeps SET, RESET and PRAGMA from undoing it.

        DuckDB checks a path as given (the glob) and then each file it expands to, so both the directory
        and its escaped glob are allowed. Statements that write inside the dataset (COPY TO, EXPORT) are
        not stopped here: ``query sql`` runs only statements that read.
        """
        allowed = dict.fromkeys(_sql_string(d + os.sep) for d in (self._root, glob.escape(self._root)))
        con.execute(f"SET allowed_directories = [{', '.join(allowed)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
