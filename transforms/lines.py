"""An n-gram file as text: streaming decompression into reused buffers, handed out in pieces of whole lines,
each piece collapsed into a run table (transforms/kernel.py) on a thread ahead of the one that takes it.

What the read stage (transforms/read.py) does with each file, and what the head start
(transforms/head_start.py) does in a process of its own while Beam starts: nothing here needs Beam, so
that process reads before Beam is loaded.
"""

import codecs
import concurrent.futures
import contextlib
import io
import mmap
import os
import threading
import zlib
from dataclasses import dataclass

from isal import igzip, isal_zlib

from ngramflow.transforms import formats
from ngramflow.transforms.checked import CountOverflow
from ngramflow.transforms.kernel import collapse_chunk, collapse_line_by_line, collapse_natively
from ngramflow.transforms.native import count_lines
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.pools import named_pool
from ngramflow.transforms.sizing import CHUNK_BYTES, READ_AHEAD_BYTES

GZIP_MAGIC = b"\x1f\x8b"
#: The room a reader's buffer has, beyond a block, for the part of a line carried to the next block; a longer
#: line grows the buffer.
LINE_ROOM = 1 << 16
#: What reading a corrupt, truncated or unreadable file raises.
CORRUPT_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)
#: The bytes of one request that a local file's pages be fetched ahead of its reader (_ReadAheadFile): isal's
#: read, so that each read asks for one more.
ADVICE_BYTES = igzip.READ_BUFFER_SIZE

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


class _ReadAheadFile(io.FileIO):
    """A local file read forwards, the kernel asked to fetch the next READ_AHEAD_BYTES beyond each read
    (posix_fadvise WILLNEED, ADVICE_BYTES a call: the kernel fetches at most its readahead window a call, 128 KiB
    to a few MiB): the pages it does not hold are read from disk while the reader decompresses those before,
    where the kernel's own readahead fetched each missing stretch when the reader came to it, and the reader
    waited. Input on a cold disk, 80M rows (BENCHMARKS.md, issue 16's forty-sixth round): the one large file
    5.96 -> 5.59 s, the 2020 1-grams 3.35 -> 3.23 s. (This project's hosts also drop pages of files read
    seconds before: an import of the 2020 1-grams waited 0.23 s in 34 reads, one of the large file 0.14 s.)
    The advice holds none of the process's memory: the kernel may drop the pages again."""

    def __init__(self, path: str):
        super().__init__(path, "rb")
        self.advised = 0  # the end of the bytes the kernel was asked for
        self.size = os.fstat(self.fileno()).st_size

    def readinto(self, buffer) -> int | None:
        at = self.tell()
        self.advised = max(self.advised, at)  # a later slice's reader starts where it seeks
        while self.advised < min(at + READ_AHEAD_BYTES, self.size):
            try:
                os.posix_fadvise(self.fileno(), self.advised, ADVICE_BYTES, os.POSIX_FADV_WILLNEED)
            except OSError:  # a file system that takes no advice: the file is read as it would be without
                self.advised = self.size
                break
            self.advised += ADVICE_BYTES
        return super().readinto(buffer)


def _open(path: str):
    """(decompressed byte stream, compressed byte stream) of a gzip or plain file.

    A name ending in .gz promises gzip (a failed download must not pass for an
    empty or plain-text file); other files are decompressed if they are gzip.
    """
    if "://" in path:  # gs://, s3://, ...: Beam's file systems (loaded by then: only the read stage reads them)
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems

        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    elif hasattr(os, "posix_fadvise"):  # not on macOS
        raw = _ReadAheadFile(path)
    else:
        raw = open(path, "rb")
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


def read_problem(err: Exception) -> str:
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
        return read_problem(err)
    return None


class _Buffers:
    """Readers' buffers, kept for the next reader when one closes: a fresh buffer is CHUNK_BYTES of new pages
    to fault in, and an import of many small files opened a reader per file (668 files: 0.17 s of CPU)."""

    SIZE, KEEP = CHUNK_BYTES + LINE_ROOM, 6

    def __init__(self):
        self.lock, self.kept = threading.Lock(), []

    def take(self) -> mmap.mmap:
        with self.lock:
            if self.kept:
                return self.kept.pop()
        # Anonymous memory, whose pages the kernel zeroes as the decompression first writes them, on its thread;
        # a bytearray was zeroed whole here, under Python's lock (its most held outside imports, py-spy --gil).
        # Private: a process forked later (a head start) reads into copies of its own, not into the text of this
        # process's readers (shared, the default, a head start begun after an earlier reading wrote into the
        # same pages as the stage: transforms/handoff.py shares its buffers on purpose).
        return mmap.mmap(-1, self.SIZE, flags=mmap.MAP_PRIVATE)

    def give(self, buffer: mmap.mmap | bytes) -> None:
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


BUFFERS = _Buffers()


#: Threads a reader's work runs on ahead of it: the decompression of its next block, the parse of its next
#: piece (isal and the kernel release Python's lock). One file's reading keeps two cores busy: the blocks were
#: decompressed, parsed and taken in turn on one thread (one file of 100M rows of 2020 1-grams: 3.1x isal's
#: time, on one core). Threads are made as readers need them; more work than threads waits (slower, never
#: stuck: no task waits for another).
AHEAD = named_pool(max(8, 2 * (os.cpu_count() or 1)), "read-ahead")


class LineReader:
    """One file's decompressed lines, handed out by where they start.

    A file's lines can be read in slices: slice k holds the lines that start in
    decompressed bytes [k*S, (k+1)*S). The definition depends on the text
    alone, so a slice read by a reader that continues from slice k-1 and one
    read by a fresh reader that skips to k*S are the same lines.

    The text is decompressed a block (CHUNK_BYTES) at a time into three buffers, reused in turn: each piece
    handed out is a view of one, valid until the second piece after it is asked for (so a piece can be parsed
    while the one before it is taken). Meanwhile the next block is decompressed into the third, on a thread
    of ``pool``, after LINE_ROOM bytes for the part of a line the block before ends with; with no pool, each
    block when it is needed and each piece collapsed as it is taken, on the reader's own thread. (A bytes
    object per piece cost two copies of the text, its join to the line left over and its cut, and fresh pages
    for both: 0.6x of the decompression's own CPU time.)
    """

    def __init__(self, path: str, forced_format: str | None, pool: concurrent.futures.Executor | None = AHEAD,
                 block: int | None = None):
        self.path, self.pool = path, pool  # the pool also collapses the reader's pieces (collapsed_pieces)
        # Decompressed bytes read at once (None: CHUNK_BYTES, looked up now): less for a look at a file's beginning.
        self.block = block or CHUNK_BYTES
        self.data, self.raw = _open(path)
        self.buffer = BUFFERS.take()
        self.retired = []  # buffers the text has left, until no piece handed out is a view of them
        self.handed = None  # the buffer of the last piece handed out
        self.ahead = None  # (buffer, future of decompress_into it): the next block, under way
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
        if self.buffer[self.start:min(self.end, self.start + len(codecs.BOM_UTF8))] == codecs.BOM_UTF8:
            self.start += len(codecs.BOM_UTF8)
            self.offset = len(codecs.BOM_UTF8)

    def decompress_into(self, buffer: mmap.mmap) -> tuple[int, int]:
        """The next block of text into BUFFER, after its LINE_ROOM: (its bytes, the compressed bytes read by
        then). On a thread of the reader's pool, but for a reader's first block and without a pool."""
        got = self.data.readinto(memoryview(buffer)[LINE_ROOM:LINE_ROOM + self.block])
        return got, self.raw.tell()

    def _next_block(self) -> tuple:
        """(a buffer holding the next block of text after its LINE_ROOM, the block's bytes, the compressed bytes
        read by its end), and the block after it set decompressing (0 bytes: the text's end)."""
        if self.ahead:
            target, future = self.ahead
            self.ahead = None
            got, compressed = future.result()
        else:
            target = BUFFERS.take()
            got, compressed = self.decompress_into(target)
        if got and self.pool:
            free = BUFFERS.take()
            self.ahead = (free, self.pool.submit(self.decompress_into, free))
        return target, got, compressed

    def _give(self, buffer) -> None:
        """A buffer the text has left, and no piece handed out is a view of any more."""
        BUFFERS.give(buffer)

    def _fill(self) -> bool:
        """The next block after the unread text (a part of a line: lines_before fills only when no whole line
        is left), both in another buffer; False at the end."""
        if self.at_end:
            return False
        target, got, self.compressed = self._next_block()
        unread = self.end - self.start
        if unread <= LINE_ROOM:
            target[LINE_ROOM - unread:LINE_ROOM] = self.buffer[self.start:self.end]
            text, start = target, LINE_ROOM - unread
        else:  # a line longer than the room before a block: a buffer of its own, holding the line and the block
            text, start = self.buffer[self.start:self.end] + target[LINE_ROOM:LINE_ROOM + got], 0
            self._give(target)
        self.retired.append(self.buffer)
        self.buffer = text
        self.start, self.end = start, start + unread + got
        if not got:
            self.at_end = True
        return bool(got)

    def forget_text(self) -> bytes:
        """The text read and not handed out (from the start of a line); the reader keeps none of its text, nor
        this process its buffers: only its stream is read on, by decompress_into (the head start's handover,
        transforms/handoff.py, whose process holds no more than that)."""
        unread = self.buffer[self.start:self.end]  # a copy
        self.buffer, self.retired, self.handed, self.start, self.end = b"", [], None, 0, 0
        BUFFERS.drop()
        return unread

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
                    self._give(buffer)
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
            BUFFERS.give(buffer)
        self._close_source()
        for buffer in (self.buffer, *self.retired):
            if buffer is not None:
                self._give(buffer)
        self.buffer, self.retired = None, []

    def _close_source(self) -> None:
        with self.raw, contextlib.closing(self.data):
            pass


class InThisThread(concurrent.futures.Executor):
    """Runs each task as it is submitted, in the thread that submits it: a reader's work kept to one core."""

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            future.set_exception(err)
        return future


def spread(files: list, count: int) -> list:
    """Up to COUNT of FILES, spread evenly over their list from its first: the files a look before an import
    reads (first_runs)."""
    return files[::max(1, len(files) // count)][:count]


def first_runs(path: str, settings: ReadSettings, end: int | None = None):
    """(run table, compressed bytes read) of the first piece of the file at PATH: its lines before
    decompressed offset END (None: the first block's), collapsed as the import collapses them, on this thread;
    None when the file cannot be read or holds nothing (the import itself says why). A look at the input
    before its import: how dense its run tables are (density.py), whether it is in order (sorted_input.py)."""
    try:
        reader = LineReader(path, settings.format, pool=None, block=end)  # a block or so
    except (InputFileError, *CORRUPT_ERRORS):
        return None
    try:
        if reader.format == "empty":
            return None
        first_line, _, chunk = next(reader.lines_before(end))
        runs = collapse_chunk(chunk, reader.format, path, first_line, settings.policy, settings.keep_years).runs
        return runs, reader.compressed
    except (StopIteration, *CORRUPT_ERRORS):
        return None
    finally:
        reader.close()


def collapsed_pieces(reader: LineReader, end: int | None, settings: ReadSettings):
    """(number of the first line, number of lines, Collapsed) of each piece of READER's lines before END, in
    order; each piece is collapsed by the kernel on a thread of the reader's pool (if it has one) while the one
    before it is taken (a piece stays valid until the second after it is asked for), and its lines are counted
    there, by the kernel that parses them. A piece the kernel cannot vouch for is read by the reference route
    here, in order, where the number of its first line is known."""
    pending = None  # (piece, future Collapsed or None) of the piece being collapsed
    pool = reader.pool or InThisThread()

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
            done, pending = pending, (piece, pool.submit(
                collapse_natively, piece, reader.format, settings.policy, settings.keep_years))
            if done:
                yield taken(done)
        done, pending = pending, None
        if done:
            yield taken(done)
    finally:  # stopped early (an error here or in the caller): the piece's buffer outlives its collapse
        if pending and not pending[1].cancel():
            pending[1].exception()
