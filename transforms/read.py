"""Read n-gram files: streaming decompression, chunked parsing, run collapse.

Each input file is read as a stream, in chunks of whole lines (memory does not
depend on the file's size). Each chunk is parsed and its consecutive rows of one
n-gram collapsed into runs (transforms/kernel.py): what leaves this stage is a few
tables per file, one row per n-gram.
"""

import codecs
import collections
import concurrent.futures
import contextlib
import hashlib
import json
import os
import threading
import time
import zlib
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms import trigger, window
from isal import igzip, isal_zlib

from ngramflow.transforms import formats, table_coder  # noqa: F401  (tables' coder, used below)
from ngramflow.transforms.checked import CountOverflow
from ngramflow.transforms.kernel import Collapsed, collapse_line_by_line, collapse_natively
from ngramflow.transforms.native import count_lines
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.sizing import CHUNK_BYTES, EMIT_RUNS, EXPANSION

GZIP_MAGIC = b"\x1f\x8b"
#: The room a reader's buffer has, beyond a block, for the part of a line carried to the next block; a longer
#: line grows the buffer.
LINE_ROOM = 1 << 16
#: What reading a corrupt, truncated or unreadable file raises.
CORRUPT_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)

class InputFileError(RuntimeError):
    """A whole input file is unusable: corrupt gzip, unreadable, unknown format.

    The message starts with ``MARKER`` so the command line can find it inside
    the runner's wrapped exceptions and show it without a stack trace.
    """

    MARKER = CountOverflow.MARKER  # one marker for every input that cannot be imported

    def __init__(self, path: str, reason: str):
        super().__init__(f"{self.MARKER}{path}: {reason}")
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class ReadSettings:
    policy: RowPolicy = RowPolicy()
    keep_years: bool = False
    format: str | None = None  # None: detect per file
    on_corrupt: str = "fail"  # or "skip"
    progress_dir: str | None = None  # where each reading worker's running totals go, for the CLI
    slice_bytes: int | None = None  # None: read each file whole; else in slices (see LineReader)


class NotGzip(OSError):
    """A file named .gz that is not gzip: empty, or other data (an HTML error page, bzip2)."""


def _gzip_problem(head: bytes) -> str | None:
    """Why a file starting with ``head`` cannot be the gzip its .gz name says, or None."""
    if not head:
        return "empty file"
    if not head.startswith(GZIP_MAGIC):
        return f"not gzip (starts with {head!r})"
    return None


def _open(path: str):
    """(decompressed byte stream, compressed byte stream) of a gzip or plain file.

    A name ending in .gz promises gzip (a failed download must not pass for an
    empty or plain-text file); other files are decompressed if they are gzip.
    """
    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    head = raw.read(8)
    problem = _gzip_problem(head) if path.lower().endswith(".gz") else None
    if problem:
        raw.close()
        raise NotGzip(problem)
    raw.seek(0)
    if not head.startswith(GZIP_MAGIC):
        return raw, raw
    # isal's own reader, which igzip.GzipFile wraps: its readinto decompresses into the caller's buffer, where
    # GzipFile's (io's generic one) reads into a fresh bytes object and copies it (80M rows: ~0.15 s of CPU).
    return isal_zlib._GzipReader(raw, igzip.READ_BUFFER_SIZE), raw


def _problem(err: Exception) -> str:
    """The reason a whole file cannot be read, from the error reading it raised."""
    return str(err) if isinstance(err, NotGzip) else f"corrupt or truncated gzip ({err})"


def verify_readable(path: str) -> str | None:
    """Decompress a whole file, checking gzip CRCs and lengths; the problem, or None."""
    try:
        data, raw = _open(path)
        with raw, contextlib.closing(data):
            while data.read(CHUNK_BYTES):
                pass
    except CORRUPT_ERRORS as err:
        return _problem(err)
    return None


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


class _Buffers:
    """Readers' buffers, kept for the next reader when one closes: a fresh buffer is CHUNK_BYTES of new pages
    to fault in, and an import of many small files opened a reader per file (668 files: 0.17 s of CPU)."""

    SIZE, KEEP = CHUNK_BYTES + LINE_ROOM, 6

    def __init__(self):
        self.lock, self.kept = threading.Lock(), []

    def take(self) -> bytearray:
        with self.lock:
            if self.kept:
                return self.kept.pop()
        return bytearray(self.SIZE)

    def give(self, buffer: bytearray) -> None:
        """BUFFER back, unless it grew for a long line; its old contents are never read again (a reader hands
        out views of its buffer valid until its next piece, and a closed reader hands out none)."""
        with self.lock:
            if len(buffer) == self.SIZE and len(self.kept) < self.KEEP:
                self.kept.append(buffer)

    def drop(self) -> None:
        """Keep none: the reading is over, and the stages after it have the memory (the spill path's peak is
        in its vocabulary, after the reading)."""
        with self.lock:
            self.kept.clear()


_BUFFERS = _Buffers()


#: Threads a reader's work runs on ahead of it: the decompression of its next block, the parse of its next
#: piece (isal and the kernel release Python's lock). One file's reading keeps two cores busy: the blocks were
#: decompressed, parsed and taken in turn on one thread (one file of 100M rows of 2020 1-grams: 3.1x isal's
#: time, on one core). Threads are made as readers need them; more work than threads waits (slower, never
#: stuck: no task waits for another).
_AHEAD = concurrent.futures.ThreadPoolExecutor(max_workers=max(8, 2 * (os.cpu_count() or 1)),
                                               thread_name_prefix="read-ahead")


class LineReader:
    """One file's decompressed lines, handed out by where they start.

    A file's lines can be read in slices: slice k holds the lines that start in
    decompressed bytes [k*S, (k+1)*S). The definition depends on the text
    alone, so a slice read by a reader that continues from slice k-1 and one
    read by a fresh reader that skips to k*S are the same lines.

    The text is decompressed a block (CHUNK_BYTES) at a time into three buffers, reused in turn: each piece
    handed out is a view of one, valid until the second piece after it is asked for (so a piece can be parsed
    while the one before it is taken). Meanwhile, with ``read_ahead``, the next block is decompressed into
    the third, after LINE_ROOM bytes for the part of a line the block before ends with. (A bytes object per
    piece cost two copies of the text, its join to the line left over and its cut, and fresh pages for both:
    0.6x of the decompression's own CPU time.)
    """

    def __init__(self, path: str, forced_format: str | None, read_ahead: bool = True):
        self.path, self.read_ahead = path, read_ahead
        self.data, self.raw = _open(path)
        self.buffer = _BUFFERS.take()
        self.retired = []  # buffers the text has left, until no piece handed out is a view of them
        self.handed = None  # the buffer of the last piece handed out
        self.ahead = None  # (buffer, future of _decompress into it): the next block, under way
        self.at_end = False  # the whole text is decompressed
        self.compressed = 0  # compressed bytes read when the text in the buffer was decompressed
        # buffer[start:end]: read, not yet handed out; starts at the start of a line
        self.start = self.end = LINE_ROOM
        self.offset = 0  # decompressed offset of buffer[start]
        self.line = 1  # number of the line that starts there
        try:
            self._fill()
            self._drop_byte_order_mark()
            self.format = forced_format
            if self.format is None:
                self.format = formats.detect_format(self._first_lines(formats.DETECT_LINES))
            if self.format is None and self.unread().strip():
                raise InputFileError(path, f"no line among the first {formats.DETECT_LINES} is in a known "
                                     f"format ({', '.join(formats.INPUT_FORMATS)}); pass --format to force one")
        except BaseException:
            self.close()
            raise
        self.format = self.format or "empty"

    def unread(self) -> bytes:
        """A copy of the text read and not yet handed out (from the start of a line)."""
        return bytes(self.buffer[self.start:self.end])

    def _first_lines(self, count: int):
        """Copies of the first COUNT lines of the text read and not yet handed out, one at a time (a format is
        told by the first line that parses: the rest of a chunk is not copied for it)."""
        at = self.start
        for _ in range(count):
            if at >= self.end:
                return
            newline = self.buffer.find(b"\n", at, self.end)
            stop = self.end if newline < 0 else newline
            yield bytes(self.buffer[at:stop])
            at = stop + 1

    def _drop_byte_order_mark(self):
        """A UTF-8 byte order mark at the start of a file is an encoding artefact, not part of its first n-gram.

        Dropping it here gives every path, format and slice the same text; the
        offsets stay those of the decompressed file, so slices do not move.
        """
        if self.buffer.startswith(codecs.BOM_UTF8, self.start, self.end):
            self.start += len(codecs.BOM_UTF8)
            self.offset = len(codecs.BOM_UTF8)

    def _decompress(self, buffer: bytearray) -> tuple[int, int]:
        """The next block of text into BUFFER, after its LINE_ROOM: (its bytes, the compressed bytes read by
        then). On a thread of _AHEAD, but for a reader's first block and without read-ahead."""
        got = self.data.readinto(memoryview(buffer)[LINE_ROOM:LINE_ROOM + CHUNK_BYTES])
        return got, self.raw.tell()

    def _fill(self) -> bool:
        """The next block after the unread text (a part of a line: lines_before fills only when no whole line
        is left), both in another buffer, and the block after it set decompressing; False at the end."""
        if self.at_end:
            return False
        if self.ahead:
            target, future = self.ahead
            self.ahead = None
            got, self.compressed = future.result()
        else:
            target = _BUFFERS.take()
            got, self.compressed = self._decompress(target)
        unread = self.end - self.start
        if unread <= LINE_ROOM:
            target[LINE_ROOM - unread:LINE_ROOM] = self.buffer[self.start:self.end]
            text, start = target, LINE_ROOM - unread
        else:  # a line longer than the room before a block: a buffer of its own, holding the line and the block
            text, start = self.buffer[self.start:self.end] + target[LINE_ROOM:LINE_ROOM + got], 0
            _BUFFERS.give(target)
        self.retired.append(self.buffer)
        self.buffer = text
        self.start, self.end = start, start + unread + got
        if not got:
            self.at_end = True
        elif self.read_ahead:
            free = _BUFFERS.take()
            self.ahead = (free, _AHEAD.submit(self._decompress, free))
        return bool(got)

    def _cut(self, end: int | None) -> int:
        """The unread bytes up to the end of the last whole line that starts before decompressed offset END
        (None: the last whole line read), or 0 if that line is not all read."""
        if end is not None and end - self.offset < self.end - self.start:
            # the line holding byte end-1 is the last
            newline = self.buffer.find(b"\n", self.start + end - self.offset - 1, self.end)
        else:
            newline = self.buffer.rfind(b"\n", self.start, self.end)
        return newline + 1 - self.start if newline >= 0 else 0

    def lines_before(self, end: int | None):
        """(number of the first line, number of lines, bytes) of consecutive pieces of whole lines,
        up to the last line that starts before decompressed offset ``end`` (None: the end of the file).
        Each piece's bytes are a view of one of the reader's buffers, valid until the second piece after it is
        asked for."""
        for piece in self.pieces_before(end):
            lines = count_lines(piece)
            yield self.line, lines, piece
            self.line += lines

    def pieces_before(self, end: int | None):
        """lines_before's pieces, their lines not counted: whoever takes them counts them, and moves ``line``
        past them before the reader is read on from another place (_collapsed: the kernel counts the lines
        it parses)."""
        while end is None or self.offset < end:
            cut = self._cut(end)
            if not cut:
                if self._fill():
                    continue
                if self.end == self.start:
                    return
                cut = self.end - self.start  # the file's last line has no newline
            piece = memoryview(self.buffer)[self.start:self.start + cut]
            # The piece before this one stays valid; those before it are over.
            for buffer in self.retired:
                if buffer is not self.handed:
                    _BUFFERS.give(buffer)
            self.retired = [b for b in self.retired if b is self.handed]
            self.handed = self.buffer
            yield piece
            self.start, self.offset = self.start + cut, self.offset + cut

    def close(self):
        if self.ahead:  # the decompression into a buffer ends before the buffer and the file are let go
            buffer, future = self.ahead
            self.ahead = None
            if not future.cancel():
                future.exception()  # waits for it; the error of a block no one reads is no one's
            _BUFFERS.give(buffer)
        with self.raw, contextlib.closing(self.data):
            pass
        for buffer in (self.buffer, *self.retired):
            if buffer is not None:
                _BUFFERS.give(buffer)
        self.buffer, self.retired = None, []


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


def slice_count(size: int, slice_bytes: int | None) -> int:
    """How many slices of ``slice_bytes`` decompressed bytes a file of ``size`` compressed bytes is read in
    (1: whole), from the usual expansion of gzip text."""
    return -(-size * EXPANSION // slice_bytes) if slice_bytes else 1


def pack_files(files, target_bytes: int, slice_bytes: int | None = None) -> list[list]:
    """Group (path, size) pairs, in order, into work units of (path, size, slice, slices) of about ``target_bytes``.

    Small files read one per element would cost more in per-element overhead
    than in reading; a large file stays a unit of its own or, with
    ``slice_bytes``, is cut into one unit per slice of that much decompressed text.
    """
    groups, current, current_bytes = [], [], 0
    for path, size in files:
        slices = slice_count(size, slice_bytes)
        if slices > 1:
            groups += [current] if current else []
            groups.extend([(path, size, index, slices)] for index in range(slices))
            current, current_bytes = [], 0
            continue
        if current and current_bytes + size > target_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append((path, size, 0, 1))
        current_bytes += size
    return groups + ([current] if current else [])


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
                raise InputFileError(path, f"{_problem(err)}; the output is marked incomplete. Use "
                                     "--on-corrupt-file skip to record such files as skipped and go on") from None
            yield from self.file_read(path)
            self.progress.part_done(stats["rows_read"], _share(size, index, slices), index == slices - 1)
        self.progress.flush()
        yield from self.unit_read()
        path, _, index, _ = unit[0]
        yield beam.pvalue.TaggedOutput(self.FILE_STATS, (f"{file_id(path)}-{index:06d}", all_stats))

    def finish_bundle(self):
        _BUFFERS.drop()

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
        settings = self.settings
        slice_bytes = settings.slice_bytes or 0
        start, end = index * slice_bytes, None if index == slices - 1 else (index + 1) * slice_bytes
        reader = _OPEN_READERS.take(path, start) or LineReader(path, settings.format)
        kept = False
        try:
            stats["format"] = reader.format
            if reader.format == "empty":
                return
            for _ in reader.lines_before(start):
                pass  # earlier slices' lines: a fresh reader skips them
            started, share = reader.compressed, _share(size, index, slices)
            # Closed before the reader is, if the caller stops early: the piece collapsing still reads a buffer.
            with contextlib.closing(_collapsed(reader, end, settings)) as pieces:
                for first_line, lines, collapsed in pieces:
                    stats["rows_read"] += lines
                    stats["rows_rejected"] += collapsed.rejects.num_rows
                    stats["rows_filtered"] += collapsed.dropped
                    if collapsed.rejects.num_rows:
                        name = f"part-{file_id(path)}-{first_line:012d}"
                        yield beam.pvalue.TaggedOutput(self.REJECTS, (name, collapsed.rejects))
                    if collapsed.runs.num_rows:
                        yield collapsed
                    self.progress.update(stats["rows_read"], min(reader.compressed - started, share))
            if end is not None:
                _OPEN_READERS.keep(path, end, reader)
                kept = True
        finally:
            if not kept:
                reader.close()


def _collapsed(reader: LineReader, end: int | None, settings: ReadSettings):
    """(number of the first line, number of lines, Collapsed) of each piece of READER's lines before END, in
    order; each piece is collapsed by the kernel on a thread of _AHEAD while the one before it is taken (a
    piece stays valid until the second after it is asked for), and its lines are counted there, by the kernel
    that parses them. A piece the kernel cannot vouch for is read by the reference route here, in order, where
    the number of its first line is known."""
    pending = None  # (piece, future Collapsed or None) of the piece being collapsed

    def taken(done):
        piece, future = done
        collapsed = future.result()
        if collapsed is None:
            collapsed = collapse_line_by_line(piece, reader.format, reader.path, reader.line, settings.policy,
                                              settings.keep_years)
        first_line, reader.line = reader.line, reader.line + collapsed.lines
        return first_line, collapsed.lines, collapsed

    try:
        for piece in reader.pieces_before(end):
            done, pending = pending, (piece, _AHEAD.submit(
                collapse_natively, piece, reader.format, settings.policy, settings.keep_years))
            if done:
                yield taken(done)
        done, pending = pending, None
        if done:
            yield taken(done)
    finally:  # stopped early (an error here or in the caller): the piece's buffer outlives its collapse
        if pending and not pending[1].cancel():
            pending[1].exception()


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
