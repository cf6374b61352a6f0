"""A complete dataset opened for reading: its manifest, and DuckDB views over its outputs.

Views (see schemas/ for their columns): ``ngrams``, ``vocabulary``, ``rejects``,
``totalcounts`` when the import had per-year totals, and ``mkn_ngrams``,
``mkn_contexts``, ``mkn_discounts`` when it has a complete MKN model. The
partitioned outputs are read with their ``order=N`` folders as a column, so a
filter on ``"order"`` scans only that order's files.

Only local directories are read. Nothing here imports Beam: a query's process
starts in a fraction of a second.
"""

import functools
import glob
import json
import os

import duckdb
import pyarrow as pa

import schemas
from pipeline.errors import UserError
from schemas import INCOMPLETE, MANIFEST


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _first_line(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.readline().strip()


class Dataset:
    def __init__(self, path: str):
        self.path = path
        self.manifest = self._read_manifest()

    def _read_manifest(self) -> dict:
        path = self.path
        if "://" in path:
            raise UserError(f"query reads local datasets only; copy {path} to this machine first")
        if not os.path.exists(path):
            raise UserError(f"{path} does not exist")
        if not os.path.isdir(path):
            raise UserError(f"{path} is a file, not an ngramflow output directory")
        if not os.path.exists(os.path.join(path, MANIFEST)):
            marker = os.path.join(path, INCOMPLETE)
            if os.path.exists(marker):
                raise UserError(f"{path} is an incomplete dataset ({_first_line(marker)}); run the import again")
            raise UserError(f"{path} is not an ngramflow output directory (it has no {MANIFEST})")
        with open(os.path.join(path, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
        if manifest.get("schema_version", 0) > schemas.SCHEMA_VERSION:
            raise UserError(f"{path} was written by a newer ngramflow (schema version "
                            f"{manifest['schema_version']}); upgrade ngramflow to query it")
        return manifest

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
        return os.path.exists(self.file("totalcounts.parquet"))

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
            marker = self.file("mkn", INCOMPLETE)
            state = f"its MKN model is incomplete ({_first_line(marker)})" if os.path.exists(marker) \
                else "it has no MKN model"
            raise UserError(f"cannot score with {self.path}: {state}; build one with "
                            f"'ngramflow mkn {self.path} --order N --overwrite'")
        return self.model_order

    def ngrams_of_order(self, order: int) -> str | None:
        """The n-grams of one order as a table expression that reads only ngrams/order=N/ (None: no such order)."""
        if order not in self.orders:
            return None
        return self._read_parquet(f"ngrams/order={order}/*.parquet", partitioned=False)

    def _read_parquet(self, pattern: str, partitioned: bool) -> str:
        options = ", hive_partitioning = true, hive_types = {'order': 'TINYINT'}" if partitioned else ""
        return f"read_parquet({_sql_string(self.file(pattern))}{options})"

    @functools.cached_property
    def _outputs(self) -> dict[str, tuple[str, pa.Schema, bool]]:
        """View name -> (its files, its schema, whether it is partitioned in order=N folders)."""
        outputs = {
            "ngrams": ("ngrams/*/*.parquet", schemas.ngrams_schema(self.keep_years), True),
            "vocabulary": ("vocabulary/*.parquet", schemas.VOCABULARY, False),
            "rejects": ("rejects/*.parquet", schemas.REJECTS, False),
        }
        if self.has_totalcounts:
            outputs["totalcounts"] = ("totalcounts.parquet", schemas.TOTALCOUNTS, False)
        if self.model_order is not None:
            outputs["mkn_ngrams"] = ("mkn/ngrams/*/*.parquet", schemas.MKN_NGRAMS, True)
            outputs["mkn_contexts"] = ("mkn/contexts/*/*.parquet", schemas.MKN_CONTEXTS, True)
            outputs["mkn_discounts"] = ("mkn/discounts.parquet", schemas.MKN_DISCOUNTS, False)
        return outputs

    def table(self, name: str) -> str:
        """An output (a view name) as a table expression; a filter on "order" skips the other orders' files."""
        pattern, _, partitioned = self._outputs[name]
        return self._read_parquet(pattern, partitioned)

    def connect(self, views: bool = False) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection, with a view per output of the dataset if asked.

        Creating a view reads a footer of its files (DuckDB learns the columns), so
        look-ups that read one order go without views.
        """
        con = duckdb.connect()
        # A query may look up several n-grams in the same files; read each footer once.
        con.execute("SET parquet_metadata_cache = true")
        for name, (pattern, schema, _) in (self._outputs if views else {}).items():
            if next(glob.iglob(glob.escape(self.path) + "/" + pattern), None) is None:
                # An output with no rows may have no files: an empty table keeps queries over it valid.
                con.register(name, schema.empty_table())
            else:
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM {self.table(name)}")
        return con
