"""The read stage: work units of n-gram files -> run tables, rejects and file statistics.

Each input file is read as a stream, in pieces of whole lines (transforms/lines.py: memory does not depend on
the file's size). Each piece is parsed and its consecutive rows of one n-gram collapsed into runs
(transforms/kernel.py): what leaves this stage is a few tables per file, one row per n-gram. Files of the
first work unit may be read already, by the head start (transforms/head_start.py).
"""

import collections
import contextlib
import hashlib
import json
import os
import threading
import time

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms import trigger, window

from ngramflow.transforms import head_start
from ngramflow.transforms import table_coder  # noqa: F401  (tables' coder, used below)
from ngramflow.transforms.handoff import HandoffLost
from ngramflow.transforms.kernel import Collapsed
from ngramflow.transforms.lines import (BUFFERS, CORRUPT_ERRORS, InputFileError, LineReader, ReadSettings,
                                        collapsed_pieces, read_problem, verify_readable)
from ngramflow.transforms.sizing import EMIT_RUNS

#: The progress files of a run's scratch folder: one per reading worker, one per merged n-gram range.
WORKER_PROGRESS, RANGE_PROGRESS = "worker-*.json", "range-*.json"


def _write_json(target: str, state: dict) -> None:
    tmp = target + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh)
    os.replace(tmp, target)


def report_range_done(progress_dir: str, index: int, count: int) -> None:
    """Record that n-gram range INDEX of COUNT is merged and written (transforms/spill.py)."""
    _write_json(os.path.join(progress_dir, RANGE_PROGRESS.replace("*", f"{index:05d}")), {"of": count})


class Progress:
    """A worker's running totals in a small JSON file that the command line polls.

    One file per reading DoFn instance, rewritten at most every WRITE_EVERY
    seconds, and when a work unit is done (``flush``): a unit of many small files
    costs one write, not one per file (668 files: 0.13 s of CPU).
    """

    WRITE_EVERY = 0.5

    def __init__(self, progress_dir: str | None):
        self.target = None
        if progress_dir:
            self.target = os.path.join(progress_dir, WORKER_PROGRESS.replace("*", f"{os.getpid()}-{id(self):x}"))
        self.done = {"files_done": 0, "rows": 0, "bytes": 0}
        self.current = {"rows": 0, "bytes": 0}
        self.written = 0.0

    def update(self, rows: int, compressed_bytes: int):
        self.current = {"rows": rows, "bytes": compressed_bytes}
        if time.time() - self.written >= self.WRITE_EVERY:
            self.flush()

    def part_done(self, rows: int, compressed_bytes: int, file_done: bool):
        self.done = {"files_done": self.done["files_done"] + file_done, "rows": self.done["rows"] + rows,
                     "bytes": self.done["bytes"] + compressed_bytes}
        self.current = {"rows": 0, "bytes": 0}
        if time.time() - self.written >= self.WRITE_EVERY:
            self.flush()

    def flush(self):
        if self.target is None:
            return
        state = {"files_done": self.done["files_done"], "rows": self.done["rows"] + self.current["rows"],
                 "bytes": self.done["bytes"] + self.current["bytes"]}
        _write_json(self.target, state)
        self.written = time.time()


class _OpenReaders:
    """Readers left at the end of a slice, for a later slice of the same file.

    ReadNgramFiles sends a file's slices to one worker, in order, so the next
    slice usually continues where the last one stopped instead of decompressing
    the file from its start again. After a restore from a checkpoint, or when
    a slice comes before one already read, it starts a fresh reader and skips:
    only slower. Shared by the DoFn instances of a worker process, hence the lock.
    """

    LIMIT = 4

    def __init__(self):
        self.lock, self.readers = threading.Lock(), collections.OrderedDict()

    def take(self, path: str, start: int) -> LineReader | None:
        """A reader of ``path`` that has handed out only lines starting before ``start``, if one is kept."""
        with self.lock:
            kept = self.readers.get(path)
            if kept is None or kept[0] > start:
                return None
            return self.readers.pop(path)[1]

    def keep(self, path: str, read_before: int, reader: LineReader):
        """Keep ``reader``, which has handed out the lines of ``path`` that start before ``read_before``."""
        with self.lock:
            replaced = self.readers.pop(path, None)
            if replaced:
                replaced[1].close()
            self.readers[path] = (read_before, reader)
            while len(self.readers) > self.LIMIT:
                self.readers.popitem(last=False)[1][1].close()


_OPEN_READERS = _OpenReaders()


def file_id(path: str) -> str:
    """A short name for an input file, stable across runs, for the files written about it."""
    return hashlib.sha1(path.encode()).hexdigest()[:16]


def merge_file_stats(parts: list[dict]) -> list[dict]:
    """One statistics record per file from the records of its slices, sorted by path."""
    merged = {}
    for part in sorted(parts, key=lambda s: (s["path"], s["slice"])):
        part = {k: v for k, v in part.items() if k != "slice"}
        whole = merged.setdefault(part["path"], part)
        if whole is not part:
            for key in ("rows_read", "rows_rejected", "rows_filtered"):
                whole[key] += part[key]
    return list(merged.values())


class ReadNgramFile(beam.DoFn):
    """A work unit (see pack_files) -> run tables (transforms/collapse.py); named reject tables and file
    stats on the side.

    Runs of consecutive files are buffered up to EMIT_RUNS rows, so small files
    do not each cost an element downstream.
    """

    REJECTS = "rejects"
    FILE_STATS = "file_stats"

    def __init__(self, settings: ReadSettings):
        self.settings = settings
        self.progress = None

    def setup(self):
        self.progress = Progress(self.settings.progress_dir)

    def process(self, unit):
        all_stats = []
        self.buffered, self.buffered_rows = [], 0
        for path, size, index, slices in unit:
            stats = {"path": path, "size": size, "format": None, "rows_read": 0, "rows_rejected": 0,
                     "rows_filtered": 0, "status": "ok", "reason": None, "slice": index}
            all_stats.append(stats)
            problem = verify_readable(path) if self.settings.on_corrupt == "skip" else None
            if problem:
                stats.update(status="skipped", reason=problem)
                continue
            try:
                for output in self._read(path, size, index, slices, stats):
                    if isinstance(output, beam.pvalue.TaggedOutput):
                        yield output
                    else:
                        yield from self.take_runs(path, output)
            except CORRUPT_ERRORS as err:
                raise InputFileError(path, f"{read_problem(err)}; the output is marked incomplete. Use "
                                     "--on-corrupt-file skip to record such files as skipped and go on") from None
            yield from self.file_read(path)
            self.progress.part_done(stats["rows_read"], _share(size, index, slices), index == slices - 1)
        self.progress.flush()
        yield from self.unit_read()
        path, _, index, _ = unit[0]
        yield beam.pvalue.TaggedOutput(self.FILE_STATS, (f"{file_id(path)}-{index:06d}", all_stats))

    def finish_bundle(self):
        BUFFERS.drop()

    def take_runs(self, path: str, collapsed: Collapsed):
        """The outputs of one chunk's runs of file PATH, being read: here, run tables of EMIT_RUNS rows."""
        self.buffered.append(collapsed.runs)
        self.buffered_rows += collapsed.runs.num_rows
        if self.buffered_rows >= EMIT_RUNS:
            yield pa.concat_tables(self.buffered)
            self.buffered, self.buffered_rows = [], 0

    def file_read(self, path: str):
        """The outputs due once a file (or slice) is read whole: here, none."""
        return ()

    def unit_read(self):
        """The outputs due once the work unit is read: here, the run tables still buffered."""
        if self.buffered:
            yield pa.concat_tables(self.buffered)

    def _read(self, path, size, index, slices, stats):
        """The rejects (tagged) and Collapsed pieces of a file or slice, counted in STATS: taken from the head
        start as far as it read the file (transforms/head_start.py), the rest read here."""
        taken = head_start.take(path, self.settings) if slices == 1 else None
        pieces = self._taken(path, size, taken, stats) if taken else self._pieces(path, size, index, slices, stats)
        # Closed before the reader is, if the caller stops early: the piece collapsing still reads a buffer.
        with contextlib.closing(pieces):
            for first_line, lines, collapsed, compressed in pieces:
                stats["rows_read"] += lines
                stats["rows_rejected"] += collapsed.rejects.num_rows
                stats["rows_filtered"] += collapsed.dropped
                if collapsed.rejects.num_rows:
                    name = f"part-{file_id(path)}-{first_line:012d}"
                    yield beam.pvalue.TaggedOutput(self.REJECTS, (name, collapsed.rejects))
                if collapsed.runs.num_rows:
                    yield collapsed
                self.progress.update(stats["rows_read"], compressed)

    def _taken(self, path, size, taken, stats):
        """The head start's pieces of a whole file, each with the compressed bytes read by its end, then the
        pieces of the rest of the file, from where the head start stopped: its text handed over by the head start
        (transforms/handoff.py), or, if the head start is gone before its end, read here."""
        stats["format"], pieces, resume, rest = taken
        yield from pieces
        if resume is not None:
            yield from self._pieces(path, size, 0, 1, stats, resume, rest)

    def _pieces(self, path, size, index, slices, stats, resume: int | None = None, rest: LineReader | None = None):
        """The pieces of a file's slice, read here, each with the compressed bytes of the slice read by then; or,
        from decompressed offset RESUME, those of the rest of a whole file (the head start read up to it), from
        REST if the head start hands that text over."""
        settings = self.settings
        slice_bytes = settings.slice_bytes or 0
        start, end = index * slice_bytes, None if index == slices - 1 else (index + 1) * slice_bytes
        start = start if resume is None else resume
        reader = rest or _OPEN_READERS.take(path, start) or LineReader(path, settings.format)
        kept, lost, taken_to = False, False, start
        try:
            stats["format"] = reader.format
            if reader.format == "empty":
                return
            for _ in reader.lines_before(start):
                pass  # earlier slices' lines: a fresh reader skips them
            # A slice's progress counts from its start, the rest of a file's from the file's.
            started, share = (reader.compressed if resume is None else 0), _share(size, index, slices)
            with contextlib.closing(collapsed_pieces(reader, end, settings)) as pieces:
                for piece in pieces:
                    taken_to = reader.offset  # the end of the piece (the reader has cut the next one)
                    yield *piece, min(reader.compressed - started, share)
            if end is not None:
                _OPEN_READERS.keep(path, end, reader)
                kept = True
        except HandoffLost:  # the head start ended while handing its text over
            lost = True
        finally:
            if not kept:
                reader.close()
        if lost:  # the rest read here, from the end of the last piece taken
            yield from self._pieces(path, size, 0, 1, stats, taken_to)


def _share(size: int, index: int, slices: int) -> int:
    """Compressed bytes a slice stands for, in progress reports: the file's size split evenly."""
    return size * (index + 1) // slices - size * index // slices


class SlicesInOrder(beam.PTransform):
    """Work units spread over the workers, all slices of a file to one worker in their order.

    There each slice continues the reader the last one left (_OpenReaders).
    Beam's Reshuffle cannot do this: Flink turns it into a round-robin.
    """

    def expand(self, units):
        return (
            units
            | "Key by file" >> beam.Map(lambda unit: (unit[0][0], unit))
            | "Pass each unit on at once" >> beam.WindowInto(
                window.GlobalWindows(), trigger=trigger.Repeatedly(trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING)
            | "Group by file" >> beam.GroupByKey()
            | "Units" >> beam.FlatMap(lambda keyed: keyed[1])
            # Back to the default trigger: every grouping downstream waits for all of its input.
            | "Wait for all again" >> beam.WindowInto(window.GlobalWindows())
        )


class ReadNgramFiles(beam.PTransform):
    """Work units (see pack_files) -> tagged outputs: run tables ("runs"), named reject
    tables, and per unit a named list of file (or slice) stats (see merge_file_stats)."""

    def __init__(self, settings: ReadSettings):
        super().__init__()
        self.settings = settings

    def expand(self, units):
        spread = SlicesInOrder() if self.settings.slice_bytes else beam.Reshuffle()
        return (
            units
            | "Spread work units over workers" >> spread
            | "Parse rows and collapse runs" >> beam.ParDo(ReadNgramFile(self.settings)).with_output_types(
                pa.Table).with_outputs(
                ReadNgramFile.REJECTS, ReadNgramFile.FILE_STATS, main="runs")
        )
