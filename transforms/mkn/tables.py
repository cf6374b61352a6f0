"""Bucketed tables on disk: how the MKN stage's passes hand rows to each other, and the kernel
(DuckDB, vectorized and bounded by a memory limit) that runs each pass inside one bucket.

A pass writes each row it produces into the bucket of the key the *next* pass joins on
(``hash(key) % buckets``), as Arrow IPC files under ``WORK/TABLE/order=N/bucket=K/``. A task then
reads one bucket of each table it joins, so every join is local to a bucket and no task holds more
than a bucket's rows; DuckDB's hash joins and aggregates spill to disk past the task's memory
limit, so a bucket larger than planned costs time, not memory. A join's memory is its build side
(one row per distinct key, spread evenly by the hash); the rows that probe it stream, so a key with
many rows (a frequent context) makes its task longer, never larger.

Tasks exchange references, not rows: a task returns the files it wrote as ``Written`` records,
and the next pass's tasks read only files so listed. A retried task writes new files, and only the
references of the attempt that succeeded are passed on (as in transforms/runfiles.py).
"""

import os
import tempfile
import uuid
from typing import NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.ipc as ipc

from ngramflow.transforms import sizing
from ngramflow.transforms.shards import split_by_key

#: Work files are written once and read once, by the same machine's tasks: uncompressed Arrow IPC, which
#: costs no encoding either way. Against DuckDB's partitioned Parquet COPY (snappy), scattering 2.85M
#: 5-grams into 3 buckets took 0.92 s of CPU instead of 1.44 (hash of the key included) and reading them
#: back 0.12 s instead of 0.18, for ~3x the bytes on disk (108 MB against 37).
WORK_SUFFIX = ".arrow"


class Written(NamedTuple):
    """One file a task wrote: the rows of TABLE's order-ORDER n-grams in bucket BUCKET."""

    table: str
    order: int
    bucket: int
    path: str


class Index(dict):
    """{(table, order, bucket): [paths]} of every file written so far."""

    @classmethod
    def of(cls, written) -> "Index":
        index = cls()
        for record in written:
            index.setdefault((record.table, record.order, record.bucket), []).append(record.path)
        return index

    def files(self, table: str, order: int, bucket: int) -> list[str]:
        return sorted(self.get((table, order, bucket), []))


class Work(NamedTuple):
    """Where the stage's tables live, how many buckets each has, and what one task may use."""

    folder: str
    buckets: int
    task_bytes: int  # DuckDB's memory limit in one task
    threads: int

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A task's DuckDB, spilling into a folder of its own (workers' DuckDBs would reuse each other's
        temporary file names in a shared one)."""
        os.makedirs(os.path.join(self.folder, "_duckdb"), exist_ok=True)
        spill = tempfile.mkdtemp(dir=os.path.join(self.folder, "_duckdb"))
        return duckdb.connect(config={
            "memory_limit": f"{max(64 << 20, self.task_bytes) >> 20}MB", "threads": self.threads,
            "temp_directory": spill, "preserve_insertion_order": False})

    def bucket_of(self, key_sql: str) -> str:
        return f"hash({key_sql}) % {self.buckets}"

    def scatter(self, con, table: str, order: int, query: str, key_sql: str) -> tuple[list[Written], int]:
        """Write the rows of QUERY into TABLE's buckets by the hash of KEY_SQL (an expression over them):
        a file per bucket that gets rows; returns the files written and their rows."""
        folder = os.path.join(self.folder, table, f"order={order}")
        reader = con.sql(f"SELECT *, {self.bucket_of(key_sql)} AS _bucket FROM ({query})").to_arrow_reader(
            sizing.MKN_SCATTER_BATCH_ROWS)
        files, rows = {}, 0
        try:
            for batch in reader:
                rows += batch.num_rows
                last = batch.num_columns - 1  # the bucket
                rows_only = pa.Table.from_batches([batch.select(list(range(last)))])
                for bucket, part in split_by_key(rows_only, batch.column(last).to_numpy()):
                    if bucket not in files:
                        path = os.path.join(folder, f"bucket={bucket}", f"part-{uuid.uuid4().hex}{WORK_SUFFIX}")
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        files[bucket] = (path, ipc.new_file(path, part.schema))
                    files[bucket][1].write_table(part)
        finally:
            for _, writer in files.values():
                writer.close()
        return [Written(table, order, bucket, path) for bucket, (path, _) in sorted(files.items())], rows


def scan(con, paths: list[str], columns: dict[str, str]) -> str:
    """A SQL table of COLUMNS ({name: DuckDB type}) read from the work files PATHS through CON, empty when
    there are none."""
    if not paths:
        typed = ", ".join(f"NULL::{kind} AS {name}" for name, kind in columns.items())
        return f"(SELECT {typed} WHERE false)"
    name = f"work_{uuid.uuid4().hex}"
    con.register(name, ds.dataset(paths, format="ipc"))
    return f"(SELECT {', '.join(columns)} FROM {name})"


def double(value: float) -> str:
    """A float as an exact DOUBLE literal (a bare 0.5 would be a DECIMAL in DuckDB)."""
    return f"'{float(value)!r}'::DOUBLE"


def text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def write_rows(con, query: str, root: str, name: str) -> int:
    """The rows of QUERY (the columns of a schema of schemas/, in its types) as ROOT/NAME.parquet, laid out as the
    dataset's other Parquet files (zstd, row groups of ROW_GROUP_ROWS); no file if there are none.
    Written by DuckDB under a temporary name, then renamed; returns the rows."""
    path = os.path.join(root, f"{name}.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    rows = con.execute(f"COPY ({query}) TO '{partial}' (FORMAT parquet, COMPRESSION zstd, "
                       f"ROW_GROUP_SIZE {sizing.ROW_GROUP_ROWS})").fetchall()[0][0]
    if rows:
        os.replace(partial, path)
    else:
        os.remove(partial)
    return rows
