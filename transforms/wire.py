"""How an Arrow table crosses the runner: as an Arrow IPC stream with LZ4-compressed buffers.

Beam's default coder pickles what it has no coder for, and so every table in an
element, a group or a keyed-state value is pickled, wherever it sits in a tuple.
Pickle carries a table's buffers as they are: a year mask is 88 bytes per run
however few of its 701 bits are set, and n-gram text repeats its prefixes. In
Flink's checkpointed mode those bytes are what RocksDB stores, flushes and
rewrites at every compaction, and compaction was the largest consumer of CPU
time of the whole import (measured, 25M rows of distinct 2-grams: the
TaskManager's compaction thread used 60% of its CPU, three times the Python
worker's; BENCHMARKS.md, "Flink at scale"). LZ4 makes such a table 0.19 of its
bytes (2012 1-grams: 0.35) at about 1 GB/s each way.

Registered with copyreg when this package is imported, so that every process
that pickles or unpickles a table (the import, Beam's workers) does it this way;
and as the coder of a PCollection of tables (TableCoder).
"""

import copyreg

import apache_beam as beam
import pyarrow as pa

#: The codec of the buffers: LZ4 frames (zstd makes b's tables 0.12 of their bytes, at a third of the speed).
COMPRESSION = "lz4"


def _write(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=COMPRESSION)) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_table(data: bytes) -> pa.Table:
    """The table that a pickled table's bytes hold."""
    return pa.ipc.open_stream(data).read_all()


def _reduce(table: pa.Table):
    return read_table, (_write(table),)


copyreg.pickle(pa.Table, _reduce)


class TableCoder(beam.coders.Coder):
    """The coder of a PCollection typed as tables: the same bytes as a pickled table, and a size estimate
    that encodes nothing. Beam samples the byte size of a PCollection's elements, even within a fused
    stage, by encoding them: pickled, every sampled run table was compressed for nothing (0.8 s of CPU
    on 10M rows, cProfile of a 1-worker import)."""

    def encode(self, table: pa.Table) -> bytes:
        return _write(table)

    def decode(self, data: bytes) -> pa.Table:
        return read_table(data)

    def estimate_size(self, table: pa.Table) -> int:
        return table.nbytes

    def is_deterministic(self) -> bool:
        return False


beam.coders.registry.register_coder(pa.Table, TableCoder)
