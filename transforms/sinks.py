"""Write Arrow tables and JSON records as files with deterministic names.

Every element written here already has a name that identifies it within the
job (a shard number, an order, an input file and chunk), so a file is written
under a temporary name and renamed to its final one: a retried bundle writes
the same file again instead of adding a duplicate. This needs no
finalization step, so it behaves the same in batch and in Flink's checkpointed
(streaming) mode, and it avoids the stages ``fileio.WriteToFiles`` adds per
output folder.
"""

import json
import os
import uuid

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from ngramflow.transforms import sizing


def write_then_rename(path: str, write) -> str:
    """Write ``path`` with ``write(binary file)`` under a temporary name, then rename it into place."""
    if "://" not in path:  # object stores have no folders to create
        os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with FileSystems.create(tmp) as fh:
        write(fh)
    # Replaces a file an earlier, retried attempt wrote: no duplicate, no gap.
    FileSystems.rename([tmp], [path])
    return path


def write_named_table(root: str, name: str, table: pa.Table, schema: pa.Schema) -> str:
    def write(fh):
        pq.write_table(table.cast(schema), fh, compression="zstd", row_group_size=sizing.ROW_GROUP_ROWS)

    return write_then_rename(FileSystems.join(root, f"{name}.parquet"), write)


def write_named_record(root: str, name: str, record: dict) -> str:
    return write_then_rename(FileSystems.join(root, f"{name}.json"),
                             lambda fh: fh.write(json.dumps(record, sort_keys=True).encode()))


class WriteTables(beam.PTransform):
    """(name, table) pairs -> ``root/NAME.parquet`` files in ``schema``; outputs their paths.

    NAME may contain folders (``ngrams/order=2/part-00003``).
    """

    def __init__(self, root: str, schema: pa.Schema):
        super().__init__()
        self.root, self.schema = root, schema

    def expand(self, named_tables):
        root, schema = self.root, self.schema
        return named_tables | beam.MapTuple(lambda name, table: write_named_table(root, name, table, schema))


class WriteRecords(beam.PTransform):
    """(name, dict) pairs -> ``root/NAME.json`` files; outputs their paths."""

    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def expand(self, named_records):
        root = self.root
        return named_records | beam.MapTuple(lambda name, record: write_named_record(root, name, record))
