"""Parquet and JSON-lines sinks built on ``fileio.WriteToFiles``.

``fileio.WriteToFiles`` is used rather than ``WriteToParquet`` because it is the
file sink that finalizes correctly in Flink's checkpointed (streaming) mode as
well as in batch (see ../shared/PLATFORM.md), so one writer serves every runner.
"""

import json

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io import fileio

#: Rows buffered before they are written as one Parquet row group.
ROW_GROUP_ROWS = 128 * 1024


class ParquetSink(fileio.FileSink):
    def __init__(self, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS):
        self.schema = schema
        self.row_group_rows = row_group_rows
        self._writer = None
        self._rows = []

    def open(self, fh):
        self._writer = pq.ParquetWriter(fh, self.schema, compression="zstd")
        self._rows = []

    def write(self, record):
        self._rows.append(record)
        if len(self._rows) >= self.row_group_rows:
            self._write_rows()

    def flush(self):
        self._write_rows()
        self._writer.close()

    def _write_rows(self):
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
            self._rows = []


class JsonLinesSink(fileio.TextSink):
    def write(self, record):
        super().write(json.dumps(record, sort_keys=True))


def _part_naming(suffix: str):
    def naming(window, pane, shard_index, total_shards, compression, destination):
        return f"part-{shard_index:05d}-of-{total_shards:05d}{suffix}"

    return naming


class WriteParquet(beam.PTransform):
    """Dict rows -> ``part-*.parquet`` files under a folder, with the given schema."""

    def __init__(self, path: str, schema: pa.Schema):
        super().__init__()
        self.path, self.schema = path, schema

    def expand(self, rows):
        schema = self.schema
        return rows | fileio.WriteToFiles(
            self.path, file_naming=_part_naming(".parquet"), sink=lambda _dest: ParquetSink(schema))


class WriteJsonLines(beam.PTransform):
    """JSON-serialisable records -> ``part-*.jsonl`` files under a folder."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, records):
        return records | fileio.WriteToFiles(
            self.path, file_naming=_part_naming(".jsonl"), sink=lambda _dest: JsonLinesSink())
