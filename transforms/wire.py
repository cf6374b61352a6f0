"""How an Arrow table crosses the runner: as an Arrow IPC stream with LZ4-compressed buffers.

Beam's default coder pickles what it has no coder for, and so every table in an
element, a group or a keyed-state value is pickled, wherever it sits in a tuple.
Pickle carries a table's buffers as they are: n-gram text repeats its prefixes,
and counts and year masks (columnar.py) are mostly small numbers and zeros. In
Flink's checkpointed mode those bytes are what RocksDB stores, flushes and
rewrites at every compaction, and compaction was the largest consumer of CPU
time of the whole import (measured, 25M rows of distinct 2-grams: the
TaskManager's compaction thread used 60% of its CPU, three times the Python
worker's; BENCHMARKS.md, "Flink at scale"). LZ4 made such a table 0.19 of its
bytes (2012 1-grams: 0.35) at about 1 GB/s each way, when a year mask took 88
bytes a run; it now takes the bytes of its span.

Registered with copyreg when this package is imported, so that every process
that pickles or unpickles a table (the import, Beam's workers) does it this way
(and table_coder.py codes a PCollection of tables with the same bytes).
"""

import copyreg

import pyarrow as pa

#: The codec of the buffers: LZ4 frames (zstd makes b's tables 0.12 of their bytes, at a third of the speed).
COMPRESSION = "lz4"


def write_table(table: pa.Table) -> bytes:
    """A table's bytes as they cross the runner."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=COMPRESSION)) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_table(data: bytes) -> pa.Table:
    """The table that a pickled table's bytes hold."""
    return pa.ipc.open_stream(data).read_all()


def _reduce(table: pa.Table):
    return read_table, (write_table(table),)


copyreg.pickle(pa.Table, _reduce)

