"""Sorted run files: an external sort and a streaming k-way merge with bounded memory.

The embedded runner holds every collection that crosses a stage in memory, so
anything that grows with the input goes through files instead:

    RunSpiller     tables -> run files: buffers tables up to a byte budget, then combines the
                   buffer (sorts it by its first column, the *key*, and merges rows of equal
                   keys) and writes it as one Arrow IPC file; a RunFile describes it. With
                   SpareBudgets, a full buffer is spilled beside the adds while another
                   worker's budget is spare
    AscendingRuns  tables each sorted, sharing no key -> run files as the tables come: no
                   buffer, no merge
    merged         run files -> their combined rows in key order, as tables of at most about
                   budget / MERGE_FANIN bytes, optionally only the keys in [lo, hi): a streaming
                   k-way merge that reads each file one record batch at a time; more files
                   than MERGE_FANIN are first merged in passes

A run file holds its keys sorted, each key once, in record batches of about
budget / MERGE_FANIN bytes, so MERGE_FANIN files' current batches fit the budget.
Its RunFile lists each batch's first and last key and rows: a merge of a key range
opens only the batches that overlap it, and a plan of key ranges needs no file read.
Files written by a merge pass are the merge's own and are deleted once merged; the
others stay until the dataset is published (pipeline/output.py deletes the build
folder), so that a retried merge finds them again. The folder may be local, on a
shared file system, or in gs:// or s3://: the workers of a Flink cluster share no
disk, and each merge reads files other workers wrote.
"""

import functools
import os
import posixpath
import threading
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs

from ngramflow.transforms import columnar, native
from ngramflow.transforms.pools import named_pool
from ngramflow.transforms.sizing import MERGE_FANIN, SPILL_COMPRESSION


@dataclass(frozen=True)
class RunFile:
    """A written run file: its path, rows, (first key, last key, rows) of each record batch, and its KIND (what
    its rows are: the name its writer was given)."""

    path: str
    rows: int
    batches: tuple[tuple, ...]
    kind: str

    @property
    def first(self):
        return self.batches[0][0]

    @property
    def last(self):
        return self.batches[-1][1]

    def overlaps(self, lo, hi) -> bool:
        """Whether any key of the file is in [lo, hi) (None: unbounded)."""
        return _overlap(self.first, self.last, lo, hi)


def _overlap(first, last, lo, hi) -> bool:
    """Whether keys from FIRST to LAST and the range [lo, hi) (None: unbounded) share any."""
    return (lo is None or last >= lo) and (hi is None or first < hi)


@functools.lru_cache(maxsize=16)
def _folder_system(folder: str) -> tuple[pyarrow.fs.FileSystem, str]:
    """The file system of FOLDER (a local path, or a URI such as gs://bucket/dir) and the folder within it:
    once per folder, since a remote file system's client costs a connection to make."""
    if "://" in folder:
        return pyarrow.fs.FileSystem.from_uri(folder)
    return pyarrow.fs.LocalFileSystem(), os.path.abspath(folder)


def file_system(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    """The file system of PATH (as _folder_system) and the path within it."""
    fs, folder = _folder_system(posixpath.dirname(path))
    return fs, f"{folder.rstrip('/')}/{posixpath.basename(path)}"


def make_folder(folder: str) -> None:
    fs, path = _folder_system(folder.rstrip("/"))
    fs.create_dir(path, recursive=True)


def _remove(path: str) -> None:
    fs, inner = file_system(path)
    fs.delete_file(inner)


def _batch_rows(table: pa.Table, budget: int) -> int:
    """Rows per record batch of a run file of TABLE's rows: MERGE_FANIN such batches fill the budget."""
    row_bytes = max(1, table.nbytes // max(1, table.num_rows))
    return max(1, budget // MERGE_FANIN // row_bytes)


class RunWriter:
    """Tables in key order (each key once in all of them) -> one run file (Arrow IPC, COMPRESSION), written as
    they come, in record batches of about budget / MERGE_FANIN bytes."""

    def __init__(self, folder: str, kind: str, budget: int, compression=SPILL_COMPRESSION):
        # Unique names: a retried bundle writes new files, and only the references of
        # the attempt that succeeded are passed on.
        self.path = f"{folder.rstrip('/')}/{kind}-{uuid.uuid4().hex}.arrow"
        self.kind, self.budget, self.compression = kind, budget, compression
        self.sink = self.writer = None
        self.batches = []

    @property
    def last(self):
        """The last key written (None before any)."""
        return self.batches[-1][1] if self.batches else None

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self.writer is None:
            fs, inner = file_system(self.path)
            self.sink = fs.open_output_stream(inner)
            self.writer = pa.ipc.new_file(self.sink, table.schema,
                                          options=pa.ipc.IpcWriteOptions(compression=self.compression))
        for batch in table.to_batches(max_chunksize=_batch_rows(table, self.budget)):
            self.writer.write_batch(batch)
            keys = batch.column(0)
            self.batches.append((keys[0].as_py(), keys[-1].as_py(), batch.num_rows))

    def close(self) -> RunFile | None:
        """The file written; None if no table had rows (then there is none)."""
        if self.writer is None:
            return None
        self.writer.close()
        self.sink.close()
        return RunFile(self.path, sum(rows for _, _, rows in self.batches), tuple(self.batches), self.kind)


def write_run_file(folder: str, kind: str, tables, budget: int, compression=SPILL_COMPRESSION) -> RunFile | None:
    """Write TABLES (sorted, in key order, each key once) as one run file (RunWriter); None if they have no
    rows."""
    writer = RunWriter(folder, kind, budget, compression)
    for table in tables:
        writer.write(table)
    return writer.close()


class SpareBudgets:
    """The spill budgets of a process's workers (threads of one process: the embedded runner's) that no worker
    holds. A worker holds one while it takes run tables (a bundle: ``hold``, ``give``); a spill beside its
    worker's adds holds another while it runs (``take``, ``give``), and may only when one is spare. So a worker
    whose input is one file (read in order, by it alone) spills beside its reading on the budget of the worker
    with nothing to read, and workers that all read spill in turn, as before: the process holds no more run
    tables than its workers' budgets, but for a worker that begins while a spill beside holds its budget, until
    that spill ends (a hold never waits: a worker whose bundle failed never gives its budget back)."""

    def __init__(self, workers: int):
        self.lock, self.spare = threading.Lock(), workers

    def hold(self) -> None:
        with self.lock:
            self.spare -= 1

    def take(self) -> bool:
        with self.lock:
            if self.spare <= 0:
                return False
            self.spare -= 1
            return True

    def give(self) -> None:
        with self.lock:
            self.spare += 1


#: The threads of spills beside their workers' adds, made as needed (one such spill a worker at a time).
_BESIDE = named_pool(os.cpu_count() or 1, "spill")


class RunSpiller:
    """Tables -> run files, holding at most about ``budget`` bytes of them: ``combine`` turns the
    concatenated buffer into sorted rows with each key once (and must accept an empty table).

    With ``spare`` budgets (SpareBudgets), a full buffer is spilled on a thread beside the adds when one is
    spare, one such spill at a time; its run files come out of a later ``add`` or ``flush``. One file of 80M
    rows, read in order by one worker: its reading stopped for each of its 6 spills (0.13-0.18 s), and one
    of the two cores was idle meanwhile."""

    def __init__(self, folder: str, kind: str, combine, budget: int, compression=SPILL_COMPRESSION,
                 spare: SpareBudgets | None = None):
        self.folder, self.kind, self.combine, self.budget = folder, kind, combine, budget
        self.compression, self.spare = compression, spare
        self.buffer, self.buffered = [], 0
        self.beside = None  # the future run files of the spill beside the adds, while there is one

    def add(self, table: pa.Table) -> list[RunFile]:
        if not table.num_rows:  # (a table of tokens all given before): nothing to hold, or to slice at flush
            return []
        self.buffer.append(table)
        self.buffered += table.nbytes
        if self.buffered < self.budget:
            return []
        done = self._beside_runs(wait=False)
        buffer, self.buffer, self.buffered = self.buffer, [], 0
        if self.beside is None and self.spare is not None and self.spare.take():
            self.beside = _BESIDE.submit(self._spill_beside, buffer)
            return done
        return done + self._spill(buffer)

    def flush(self, at_once: int = 1) -> list[RunFile]:
        """The run files of every table added and not yet spilled. ``at_once``: the buffer is merged in up to
        that many parts at a time, on as many threads (this one and spill threads), where each part holds at
        least a batch of a run file (budget / MERGE_FANIN), and with ``spare`` budgets one part more than there
        are idle workers (their budgets spare): a worker's last flush, which a stage's end waits for with the
        other cores idle (the one file of 80M rows: 0.11-0.15 s on one core between its reading and its merge;
        in halves, 0.06-0.07 s). Each part is a run file more for the merges: a worker that ends while the
        others still read flushes whole."""
        # The spill beside ends first: a worker's last spill and its spill beside at once would hold two merges'
        # memory, at the read stage's end, where its peak is. The parts of one spill at once hold one merge's.
        done = self._beside_runs(wait=True)
        if self.spare is not None:
            at_once = min(at_once, 1 + self.spare.spare)
        buffer, self.buffer, self.buffered = self.buffer, [], 0
        return done + (self._spill(buffer, at_once) if buffer else [])

    def _beside_runs(self, wait: bool) -> list[RunFile]:
        """The run files of the spill beside the adds once it is done (WAIT: waited for); else none."""
        if self.beside is None or not (wait or self.beside.done()):
            return []
        beside, self.beside = self.beside, None
        return beside.result()

    def _spill_beside(self, buffer: list[pa.Table]) -> list[RunFile]:
        try:
            return self._spill(buffer)
        finally:
            self.spare.give()

    def _spill(self, buffer: list[pa.Table], at_once: int = 1) -> list[RunFile]:
        table = pa.concat_tables(buffer)
        # One added table may be several budgets large: combine it in about budget-sized equal slices. A
        # buffer just past the budget stays whole (slices of the budget would leave a tiny last file).
        slices = max(1, table.nbytes // self.budget)
        # Parts at once of a run file's batch at least: the merge of a few rows on a thread of its own gains nothing.
        slices = max(slices, min(at_once, table.nbytes // max(1, self.budget // MERGE_FANIN)))
        rows = -(-table.num_rows // slices)

        def spilled(start: int) -> RunFile | None:
            return write_run_file(self.folder, self.kind, [self.combine(table.slice(start, rows))], self.budget,
                                  self.compression)

        starts, runs = range(0, table.num_rows, rows), []
        for first in range(0, len(starts), at_once):
            others = [_BESIDE.submit(spilled, start) for start in starts[first + 1:first + at_once]]
            try:
                runs.append(spilled(starts[first]))
            finally:  # the other parts end before this one's error is raised
                runs += [other.result() for other in others]
        return [run for run in runs if run is not None]


class AscendingRuns:
    """Tables each in key order, no key in two of them -> run files written as the tables come, with no buffer
    and no merge (a worker's unigrams: RunSpiller sorted and merged them again with the other tokens). A table
    whose first key is not above the file's last begins a new file; ``add`` and ``flush`` as RunSpiller's."""

    def __init__(self, folder: str, kind: str, budget: int, compression=SPILL_COMPRESSION):
        self.folder, self.kind, self.budget, self.compression = folder, kind, budget, compression
        self.writer = None

    def add(self, table: pa.Table) -> list[RunFile]:
        if not table.num_rows:
            return []
        done = []
        if self.writer is not None and not table.column(0)[0].as_py() > self.writer.last:
            done = self.flush()
        if self.writer is None:
            self.writer = RunWriter(self.folder, self.kind, self.budget, self.compression)
        self.writer.write(table)
        return done

    def flush(self) -> list[RunFile]:
        run, self.writer = (None if self.writer is None else self.writer.close()), None
        return [] if run is None else [run]


def rows_below(keys, key, through: bool = False) -> int:
    """The rows of sorted KEYS (an array or chunked array) below KEY (or up to it, THROUGH): natively, where
    a binary search in Python made a Python string of each key it looked at (a merge's every step, every
    run file: 0.07 s of an import's Python time, py-spy)."""
    return native.rows_below(columnar.whole(keys), key, through)


def rows_before(run: RunFile, key) -> int:
    """The rows of RUN whose keys are below KEY (None: none are): counted from its batches' records, and by
    a binary search of the one batch that may hold KEY. A local file is mapped, not read: the search touches
    a few pages of the batch (a plan of many ranges over many run files reads each file once per range)."""
    if key is None:
        return 0
    below = 0
    for index, (first, last, rows) in enumerate(run.batches):
        if last < key:
            below += rows
            continue
        if first < key:
            fs, inner = file_system(run.path)
            local = isinstance(fs, pyarrow.fs.LocalFileSystem)
            with pa.memory_map(inner) if local else fs.open_input_file(inner) as fh:
                below += rows_below(pa.ipc.open_file(fh).get_batch(index).column(0), key)
        break
    return below


class _Cursor:
    """The rows of one run file with keys in [lo, hi), one record batch at a time; ``batch`` is the
    unread rest of the current one (None once the range is read)."""

    def __init__(self, run: RunFile, lo, hi):
        self.lo, self.hi = lo, hi
        fs, inner = file_system(run.path)
        self.file = fs.open_input_file(inner)
        self.reader = pa.ipc.open_file(self.file)
        # Only the batches that overlap the range are read.
        self.next = 0 if lo is None else next((i for i, (_, last, _) in enumerate(run.batches) if last >= lo),
                                              len(run.batches))
        self.end = len(run.batches) if hi is None else sum(first < hi for first, _, _ in run.batches)
        self._advance()

    def _advance(self) -> None:
        self.batch = None
        while self.batch is None and self.next < self.end:
            batch = self.reader.get_batch(self.next)
            self.next += 1
            keys = batch.column(0)
            start = 0 if self.lo is None else rows_below(keys, self.lo)
            stop = len(keys) if self.hi is None else rows_below(keys, self.hi)
            self.batch = batch.slice(start, stop - start) if stop > start else None
        if self.batch is None:
            self.file.close()

    def last_key(self):
        return self.batch.column(0)[-1].as_py()

    def take_through(self, bound) -> pa.RecordBatch:
        """The rows with keys up to BOUND (they lead the sorted batch); the cursor moves past them."""
        cut = rows_below(self.batch.column(0), bound, through=True)
        head = self.batch.slice(0, cut)
        if cut == self.batch.num_rows:
            self._advance()
        else:
            self.batch = self.batch.slice(cut)
        return head


def _merge_steps(runs: list[RunFile], lo, hi):
    """The rows of run files with keys in [lo, hi), in key order, as steps: each a table of the sorted pieces
    that every file's current batch holds up to the smallest last key among those batches. No row of any
    such key is left unread (each file is sorted and holds a key once), so a step's combine is final."""
    cursors = [c for c in (_Cursor(run, lo, hi) for run in runs) if c.batch is not None]
    while cursors:
        bound = min(c.last_key() for c in cursors)
        heads = [c.take_through(bound) for c in cursors]
        yield pa.Table.from_batches([h for h in heads if h.num_rows])
        cursors = [c for c in cursors if c.batch is not None]


def _gathered(tables, nbytes: int):
    """Consecutive tables held until they hold NBYTES, then handed over as one (its chunks theirs: no copy): a
    merge step can be a few rows, and each combine is a call of its own."""
    held, size = [], 0
    for table in tables:
        held.append(table)
        size += table.nbytes
        if size >= nbytes:
            yield pa.concat_tables(held)
            held, size = [], 0
    if held:
        yield pa.concat_tables(held)


def _merge_files(runs: list[RunFile], combine, lo, hi, nbytes: int):
    """The combined rows of run files with keys in [lo, hi), in key order: COMBINE of about NBYTES of merge
    steps at a time."""
    return map(combine, _gathered(_merge_steps(runs, lo, hi), nbytes))


def merged(folder: str, kind: str, runs: list[RunFile], combine, budget: int, lo=None, hi=None,
           compression=SPILL_COMPRESSION, last=None):
    """Run files -> their combined rows with keys in [lo, hi), in key order, as tables of at most about
    budget / MERGE_FANIN bytes: COMBINE of the merge's steps, or LAST of those of the final merge when it is
    given (which may make other than run rows of them: the n-gram files' merge makes n-gram tables by order,
    where only the passes' run files need run rows).

    While there are more files than MERGE_FANIN, the fewest files that bring their number to one that full
    groups of MERGE_FANIN then end at are merged into a new run file named KIND (with COMPRESSION), those of
    fewest rows in [lo, hi) first, again and again (the merge's own files are deleted once read): so 18
    files become 16 by a merge of the smallest 3, where groups of 16 in turn rewrote nearly all of them.
    """
    runs, own, piece = sorted(runs, key=lambda run: run.path), set(), budget // MERGE_FANIN
    within = {run.path: _rows_within(run, lo, hi) for run in runs} if len(runs) > MERGE_FANIN else {}
    while len(runs) > MERGE_FANIN:
        runs.sort(key=lambda run: within[run.path])
        # Each merge of k files leaves k - 1 fewer: the first takes what full groups cannot.
        count = (len(runs) - 2) % (MERGE_FANIN - 1) + 2
        group, runs = runs[:count], runs[count:]
        run = write_run_file(folder, kind, _merge_files(group, combine, lo, hi, piece), budget, compression)
        for path in own.intersection(r.path for r in group):
            _remove(path)
            own.discard(path)
        if run is not None:
            runs.append(run)
            own.add(run.path)
            within[run.path] = run.rows  # a pass's file holds the range's keys alone
    yield from _merge_files(runs, last or combine, lo, hi, piece)
    for path in own:
        _remove(path)


def _rows_within(run: RunFile, lo, hi) -> int:
    """The rows of the batches of RUN that hold keys in [lo, hi)."""
    return sum(rows for first, last, rows in run.batches if _overlap(first, last, lo, hi))
