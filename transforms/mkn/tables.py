"""Bucketed tables on disk: how the MKN stage's passes hand rows to each other.

A pass writes each row it produces into the bucket of the key the *next* pass joins on
(``hash(key) % buckets``, the native kernel's hash: native.py), as Arrow IPC files under
``WORK/TABLE/order=N/bucket=K/``. A task then reads one bucket of each table it joins, so every join
is local to a bucket and no task holds more than a bucket's rows: its memory follows the rows of a
bucket, which the stage's planning bounds (sizing.mkn_buckets), however large the corpus. A key with
many rows (a frequent context) makes its bucket's task longer, not larger than the others: buckets
share rows, not keys.

Tasks exchange references, not rows: a task returns the files it wrote as ``Written`` records,
and the next pass's tasks read only files so listed. A retried task writes new files, and only the
references of the attempt that succeeded are passed on (as in transforms/runfiles.py).
"""

import os
import uuid
from typing import NamedTuple

import pyarrow as pa
import pyarrow.ipc as ipc

from ngramflow.transforms.mkn.native import Laid
from ngramflow.transforms.sinks import write_named_table

#: Work files are written once and read once, by the same machine's tasks: uncompressed Arrow IPC, which
#: costs no encoding either way (against snappy Parquet, ~1.5x less CPU to write and read, ~3x the bytes).
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
    """Where the stage's tables live, and how many buckets each has."""

    folder: str
    buckets: int

    def read(self, index: Index, table: str, order: int, bucket: int, schema: pa.Schema) -> pa.Table:
        """One bucket of TABLE's order-ORDER rows (columns of SCHEMA), memory-mapped."""
        paths = index.files(table, order, bucket)
        if not paths:
            return schema.empty_table()
        parts = []
        for path in paths:
            with pa.memory_map(path) as source:
                parts.append(ipc.open_file(source).read_all())
        return pa.concat_tables(parts)  # a chunk per file: the kernels read chunks where they are

    def write(self, table: str, order: int, laid: Laid) -> list[Written]:
        """Rows laid out by bucket into TABLE's buckets: a new file per bucket that gets rows."""
        with Writers(self, table, order) as writers:
            writers.write(laid)
        return writers.written


class Writers:
    """Batches of rows laid out by bucket, written into one new file per bucket of TABLE's order-ORDER rows
    (opened at its first rows), so that a task can deal a large input into buckets a batch at a time."""

    def __init__(self, work: Work, table: str, order: int):
        self.folder = os.path.join(work.folder, table, f"order={order}")
        self.table, self.order = table, order
        self.files: dict[int, tuple[str, ipc.RecordBatchFileWriter]] = {}
        self.written: list[Written] = []

    def write(self, laid: Laid) -> None:
        for bucket, part in laid.buckets():
            if bucket not in self.files:
                path = os.path.join(self.folder, f"bucket={bucket}", f"part-{uuid.uuid4().hex}{WORK_SUFFIX}")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                self.files[bucket] = (path, ipc.new_file(path, part.schema))
            self.files[bucket][1].write_table(part)

    def __enter__(self) -> "Writers":
        return self

    def __exit__(self, *failed) -> None:
        for _, writer in self.files.values():
            writer.close()
        self.written = [Written(self.table, self.order, bucket, path)
                        for bucket, (path, _) in sorted(self.files.items())]


def write_model(root: str, name: str, table: pa.Table, schema: pa.Schema) -> int:
    """TABLE as ROOT/NAME.parquet in SCHEMA's types, laid out as the dataset's other Parquet files
    (sinks.write_named_table); no file if it has no rows. Returns the rows."""
    if table.num_rows:
        write_named_table(root, name, table, schema)
    return table.num_rows


def order_column(order: int, rows: int) -> pa.Array:
    """The "order" column of ROWS model rows."""
    return pa.repeat(pa.scalar(order, pa.int8()), rows)
