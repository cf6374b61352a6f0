"""Write Arrow tables and JSON records as files with deterministic names.

Every element written here already has a name that identifies it within the
job (a shard number, an order, an input file and chunk), so a file is written
under a temporary name and renamed to its final one: a retried bundle writes
the same file again instead of adding a duplicate. This needs no
finalization step, so it behaves the same in batch and in Flink's checkpointed
(streaming) mode, and it avoids the stages ``fileio.WriteToFiles`` adds per
output folder.
"""

import collections
import contextlib
import functools
import json
import os
import uuid

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from ngramflow.schemas import NGRAMS, VOCABULARY
from ngramflow.transforms import native, sizing
from ngramflow.transforms.pools import named_pool


#: The write buffer of a local file: a Parquet writer writes each page's header apart from its data.
LOCAL_BUFFER_BYTES = 1 << 20


def _created(path: str):
    """A new binary file at PATH: an object store's through Beam's file systems; a local one as Arrow's own
    file, buffered, which a Parquet writer writes to without Python (through a Python file, each write of a
    page was a bytes object made under Python's lock while the other workers waited for it: the 2020 shards
    of 80M rows, 2% of the import's CPU and of its time)."""
    if "://" in path:  # object stores have no folders to create
        return FileSystems.create(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return pa.output_stream(path, compression=None, buffer_size=LOCAL_BUFFER_BYTES)


@contextlib.contextmanager
def renamed_when_done(path: str):
    """A binary file to write ``path`` into, under a temporary name; renamed into place when the block ends
    without an error."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with _created(tmp) as fh:
        yield fh
    # Replaces a file an earlier, retried attempt wrote: no duplicate, no gap.
    FileSystems.rename([tmp], [path])


def write_then_rename(path: str, write) -> str:
    """Write ``path`` with ``write(binary file)`` under a temporary name, then rename it into place."""
    with renamed_when_done(path) as fh:
        write(fh)
    return path


#: Columns a dictionary does not pay for, so it is not tried. Those with a value per row that no other row
#: of a file shares (the key of its rows, a token's id): Parquet's dictionary of them is built and then
#: given up. Measured on a part file of 588K 2-grams: 0.112 s of CPU and 6 MiB with it, 0.081 s and 5 MiB
#: without; in the MKN stage, building it was a fifth of the stage's time. And the order, one value a file:
#: zstd takes its plain values to nothing at a third of the dictionary's cost (n-gram part files: 1.5-3.4 ns
#: a row less, the same size).
_NO_DICTIONARY = ("ngram", "token", "context", "id", "order")


#: The n-gram files' own encodings. Their rows are sorted by n-gram, which shares most of its bytes with the
#: one before: each is stored as the length of that prefix and the rest (DELTA_BYTE_ARRAY), and zstd takes
#: less. Their integers are stored as differences bit-packed in blocks (DELTA_BINARY_PACKED), without the
#: dictionaries' hash look-ups and bit-packed indices (the years' were a third of the writer's time), and not
#: compressed again: zstd took 1-6 ns a row from each of them for at most a seventh of its bytes. Part files of
#: 9.3M 1- to 3-grams, one core, best of 3: 139 -> 105 ns a row, 10.13 -> 10.08 bytes. Read back (3 rounds):
#: pyarrow 0.27-0.29 s either way, DuckDB's scan of the n-grams 0.44-0.50 -> 0.51-0.53 s, its sums and point
#: look-ups the same.
_NGRAM_INTEGERS = ("match_count", "volume_count", "first_year", "last_year", "years")

#: The vocabulary files' own encodings, as the kernel writes them (_KernelWriter): their rows are in id order,
#: the ids consecutive and the counts descending, whose differences are small (DELTA_BINARY_PACKED, not
#: compressed again; the ids take next to nothing), and the tokens each stored as its length and bytes
#: (DELTA_BYTE_ARRAY: few share a prefix with the one before), then zstd. 8.0M tokens, one core: Arrow's writer
#: with dictionaries of the counts 93 ns a row and 51.6 MB, these 41 ns and 40.0 MB.
_VOCABULARY_INTEGERS = ("id", "match_count", "volume_count")

#: The files with encodings of their own, by their first columns: (those columns, the string column stored
#: DELTA_BYTE_ARRAY and compressed, the integers stored DELTA_BINARY_PACKED and not).
_OWN_ENCODINGS = ((NGRAMS.names, "ngram", _NGRAM_INTEGERS), (VOCABULARY.names, "token", _VOCABULARY_INTEGERS))


def _own_encodings(schema: pa.Schema) -> tuple[str, tuple[str, ...]] | None:
    """(string column, integer columns) of _OWN_ENCODINGS of a file of SCHEMA, or None."""
    for names, strings, integers in _OWN_ENCODINGS:
        if schema.names[:len(names)] == names:
            return strings, integers
    return None


def _parquet(schema: pa.Schema) -> dict:
    """The writer options of a dataset file of ``schema``."""
    encodings, compression = {}, "zstd"
    if own := _own_encodings(schema):
        strings, integers = own
        encodings = {strings: "DELTA_BYTE_ARRAY", **{n: "DELTA_BINARY_PACKED" for n in integers}}
        compression = {n: "none" if n in integers else "zstd" for n in schema.names}
    return {"compression": compression, "column_encoding": encodings,
            "use_dictionary": [n for n in schema.names if n not in _NO_DICTIONARY and n not in encodings]}


@functools.lru_cache(maxsize=8)
def _arrow_schema(schema: pa.Schema) -> str:
    """The footer's ARROW:schema entry of files of SCHEMA, as Arrow's writer makes it (its readers take their
    types from it: an int16 column comes back int16, not int32); once a schema (0.6 ms, and a part file's
    pieces are hundreds)."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    return pq.read_metadata(pa.BufferReader(sink.getvalue())).metadata[b"ARROW:schema"].decode()


#: The n-gram files' writer, as their footers name it (the manifest records the versions of the import's parts).
CREATED_BY = "ngramflow"


class _KernelWriter:
    """The part of pq.ParquetWriter's face the sinks use (write_table, close), for the n-gram and vocabulary
    files: written by the kernel (native.ParquetFile) with their encodings and compression (_parquet), but the
    n-grams' order column, DELTA_BINARY_PACKED as the other integers (one value a file: a few bytes a row group
    either way). On a part file of 489K 2-grams, one core: Arrow's writer 96-108 ns a row, 66 of them the
    n-grams' (DELTA_BYTE_ARRAY 54, statistics 9); this one 46 ns, 26 the n-grams' (zstd's 11 of them), in files
    2% smaller."""

    def __init__(self, fh, schema: pa.Schema):
        compression = _parquet(schema)["compression"]
        self.fh = fh
        self.file = native.ParquetFile(schema, {name for name, codec in compression.items() if codec == "zstd"},
                                       {"ARROW:schema": _arrow_schema(schema)}, CREATED_BY)
        fh.write(self.file.header())

    def write_table(self, table: pa.Table, row_group_size: int) -> None:
        for start in range(0, table.num_rows, row_group_size):
            self.fh.write(self.file.row_group(table.slice(start, row_group_size)))

    def close(self) -> None:
        self.fh.write(self.file.footer())

    def __enter__(self):
        return self

    def __exit__(self, *error):
        self.close()


def _writer(fh, schema: pa.Schema):
    """A Parquet writer of SCHEMA into FH: the kernel's for the n-gram and vocabulary files, else Arrow's."""
    if _own_encodings(schema) and native.parquet_writable(schema):
        return _KernelWriter(fh, schema)
    return pq.ParquetWriter(fh, schema, **_parquet(schema))


def _table_path(root: str, name: str) -> str:
    return FileSystems.join(root, f"{name}.parquet")


def write_named_table(root: str, name: str, table: pa.Table, schema: pa.Schema) -> str:
    def write(fh):
        with _writer(fh, schema) as writer:
            writer.write_table(table.cast(schema), row_group_size=sizing.ROW_GROUP_ROWS)

    return write_then_rename(_table_path(root, name), write)


class StreamedTables:
    """Named Parquet files written piece by piece (``root/NAME.parquet``) inside a ``with`` block, each under
    a temporary name and renamed when the block ends without an error; a file exists only if it has rows.

    Rows are held back until they fill whole row groups of ROW_GROUP_ROWS, so the files are laid out as
    write_named_table lays out one table of the same rows. The row groups are encoded and compressed on a
    thread of their own, in order, while the caller makes the next rows (Arrow's writer releases Python's
    lock): a stage that writes as it merges, as a range's merge or the vocabulary's numbering does, keeps
    two cores busy where it had one. At most AHEAD writes wait for that thread, so the tables held stay few.
    """

    AHEAD = 2

    def __init__(self, root: str, schema: pa.Schema):
        self.root, self.schema = root, schema
        self.files = contextlib.ExitStack()
        self.writers, self.pending = {}, {}
        self.writing = named_pool(1, "parquet")
        self.queued = collections.deque()

    def path(self, name: str) -> str:
        """Where file NAME is once the block ends."""
        return _table_path(self.root, name)

    def write(self, name: str, table: pa.Table) -> None:
        pending = self.pending.setdefault(name, [])
        pending.append(table.cast(self.schema))
        rows = sum(t.num_rows for t in pending)
        if rows >= sizing.ROW_GROUP_ROWS:
            whole = rows - rows % sizing.ROW_GROUP_ROWS
            self._flush(name, whole)

    def _flush(self, name: str, rows: int) -> None:
        table = pa.concat_tables(self.pending[name])
        self.pending[name] = [table.slice(rows)]
        while len(self.queued) >= self.AHEAD:
            self.queued.popleft().result()  # and its error, if it failed
        self.queued.append(self.writing.submit(self._write, name, table.slice(0, rows)))

    def _write(self, name: str, table: pa.Table) -> None:
        """(On the writing thread.) The table's rows appended to file NAME, opened at its first rows."""
        if name not in self.writers:
            fh = self.files.enter_context(renamed_when_done(_table_path(self.root, name)))
            self.writers[name] = self.files.enter_context(_writer(fh, self.schema))
        self.writers[name].write_table(table, row_group_size=sizing.ROW_GROUP_ROWS)

    def __enter__(self):
        return self

    def __exit__(self, *error):
        failed = None
        try:
            if error[0] is None:
                for name, pending in self.pending.items():
                    if rows := sum(t.num_rows for t in pending):
                        self._flush(name, rows)
        except Exception as err:  # an earlier write's error, met while queueing these
            failed = err
        finally:
            for write in self.queued:
                failed = failed or write.exception()  # waits for it
            self.queued.clear()
            self.writing.shutdown()
        if error[0] is None and failed is not None:
            self.files.__exit__(type(failed), failed, failed.__traceback__)  # no file renamed into place
            raise failed
        # Each writer, then its file: renamed into place, unless an error is passing through.
        return self.files.__exit__(*error)


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
