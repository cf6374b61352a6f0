"""Total n-grams through sorted run files on disk: the aggregation whose memory does not grow with the input.

Beam's embedded runner holds every shuffled collection in memory, so run tables
must not cross its shuffle. Instead they are spilled, and only references to
the files cross it:

    SpillRuns      run tables -> (shard, run file path): buffers run tables up to the
                   spill budget, then splits the buffer by shard, merges each shard's
                   piece (merge_runs: one row per n-gram, sorted) and writes it as an
                   Arrow IPC file (a *run file*) into the scratch folder; the buffer is
                   also spilled at the end of every bundle
    merged_pieces  one shard's run file paths -> its totals in n-gram order, as tables of
                   bounded size: a streaming k-way merge that reads each file batch by
                   batch; more files than MERGE_FANIN are first merged in passes

A run file holds distinct n-grams, sorted, in record batches of about
budget / MERGE_FANIN bytes, so MERGE_FANIN files' current batches fit the budget.
Run files stay until the dataset is published (pipeline/output.py deletes the
build folder): a retried merge finds them again. Files written by a merge pass
are its own, and are deleted once merged.
"""

import bisect
import os
import uuid

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.shards import split_by_shard
from ngramflow.transforms.sizing import MERGE_FANIN, SPILL_COMPRESSION

_SUFFIX = ".arrow"


def _batch_rows(table: pa.Table, budget: int) -> int:
    """Rows per record batch of a run file of TABLE's rows: MERGE_FANIN such batches fill the budget."""
    row_bytes = max(1, table.nbytes // max(1, table.num_rows))
    return max(1, budget // MERGE_FANIN // row_bytes)


def _new_path(folder: str, shard: int, kind: str) -> str:
    # Unique names: a retried bundle writes new files, and only the references of
    # the attempt that succeeded are passed on.
    return os.path.join(folder, f"{shard:05d}-{kind}-{uuid.uuid4().hex}{_SUFFIX}")


class _RunFileWriter:
    """Sorted tables appended to one run file, in record batches sized for the merge."""

    def __init__(self, path: str, schema: pa.Schema, budget: int):
        self.path, self.schema, self.budget = path, schema, budget
        self.writer = None

    def write(self, table: pa.Table) -> None:
        if self.writer is None:
            options = pa.ipc.IpcWriteOptions(compression=SPILL_COMPRESSION)
            self.writer = pa.ipc.new_file(self.path, self.schema, options=options)
        self.writer.write_table(table, max_chunksize=_batch_rows(table, self.budget))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def write_run_file(folder: str, shard: int, kind: str, tables, budget: int) -> str | None:
    """Write sorted TABLES (in n-gram order) as one run file; its path, or None if they have no rows."""
    path = _new_path(folder, shard, kind)
    writer = None
    for table in tables:
        if table.num_rows:
            writer = writer or _RunFileWriter(path, table.schema, budget)
            writer.write(table)
    if writer is None:
        return None
    writer.close()
    return path


class SpillRuns(beam.DoFn):
    """Run tables -> (shard, run file path), holding at most about ``budget`` bytes of run tables."""

    def __init__(self, folder: str, shards: int, budget: int):
        self.folder, self.shards, self.budget = folder, shards, budget
        self.buffer, self.buffered = [], 0

    def setup(self):
        os.makedirs(self.folder, exist_ok=True)

    def start_bundle(self):
        self.buffer, self.buffered = [], 0

    def process(self, runs: pa.Table):
        self.buffer.append(runs)
        self.buffered += runs.nbytes
        if self.buffered >= self.budget:
            yield from self._spill()

    def finish_bundle(self):
        for shard_and_path in self._spill():
            yield WindowedValue(shard_and_path, MIN_TIMESTAMP, [GlobalWindow()])

    def _spill(self):
        if not self.buffer:
            return
        table = pa.concat_tables(self.buffer)
        self.buffer, self.buffered = [], 0
        # One element may be larger than the budget: spill it in slices that are not.
        rows = max(1, self.budget * table.num_rows // max(1, table.nbytes))
        for start in range(0, table.num_rows, rows):
            for shard, piece in split_by_shard(table.slice(start, rows), "ngram", self.shards):
                yield shard, write_run_file(self.folder, shard, "spill", [merge_runs(piece)], self.budget)


class _Cursor:
    """A run file read one record batch at a time; ``batch`` is the unread rest of the current one."""

    def __init__(self, path: str):
        self.file = pa.OSFile(path)
        self.reader = pa.ipc.open_file(self.file)
        self.next, self.batch = 0, None
        self._advance()

    def _advance(self) -> None:
        self.batch = None
        while self.batch is None and self.next < self.reader.num_record_batches:
            batch = self.reader.get_batch(self.next)
            self.next += 1
            self.batch = batch if batch.num_rows else None
        if self.batch is None:
            self.file.close()

    def last_key(self) -> str:
        return self.batch.column(0)[-1].as_py()

    def take_through(self, bound: str) -> pa.RecordBatch:
        """The rows with n-grams up to BOUND (they lead the sorted batch); the cursor moves past them."""
        keys = self.batch.column(0)
        # Python's str order is UTF-8 byte order, which is Arrow's: a binary search of log2(n) look-ups.
        cut = bisect.bisect_right(range(len(keys)), bound, key=lambda i: keys[i].as_py())
        head = self.batch.slice(0, cut)
        if cut == len(keys):
            self._advance()
        else:
            self.batch = self.batch.slice(cut)
        return head


def _merge_files(paths: list[str]):
    """Totals of run files, one row per n-gram in n-gram order, as a sequence of tables.

    Each step takes, from every file's current batch, the rows up to the smallest
    last n-gram among those batches: no row of any such n-gram is left unread
    (each file is sorted and holds an n-gram once), so the step's merge is final.
    """
    cursors = [c for c in map(_Cursor, paths) if c.batch is not None]
    while cursors:
        bound = min(c.last_key() for c in cursors)
        heads = [c.take_through(bound) for c in cursors]
        yield merge_runs(pa.Table.from_batches([h for h in heads if h.num_rows]))
        cursors = [c for c in cursors if c.batch is not None]


def _gathered(tables, nbytes: int):
    """Consecutive tables concatenated until they hold NBYTES: a merge step can be a few rows, and each
    table becomes a record batch of a run file or an element downstream."""
    held, size = [], 0
    for table in tables:
        held.append(table)
        size += table.nbytes
        if size >= nbytes:
            yield pa.concat_tables(held).combine_chunks()
            held, size = [], 0
    if held:
        yield pa.concat_tables(held).combine_chunks()


def merged_pieces(folder: str, shard: int, paths: list[str], budget: int):
    """One shard's run files -> its totals in n-gram order, as tables of about budget / MERGE_FANIN bytes.

    While there are more files than MERGE_FANIN, groups of them are merged into
    new run files (a pass); the merge's own files are deleted once read.
    """
    paths, own, piece = sorted(paths), set(), budget // MERGE_FANIN
    while len(paths) > MERGE_FANIN:
        merged = []
        for start in range(0, len(paths), MERGE_FANIN):
            group = paths[start:start + MERGE_FANIN]
            merged.append(write_run_file(folder, shard, "pass", _gathered(_merge_files(group), piece), budget))
            for path in own.intersection(group):
                os.remove(path)
        paths = merged
        own = set(merged)
    yield from _gathered(_merge_files(paths), piece)
    for path in own:
        os.remove(path)
