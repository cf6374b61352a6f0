"""The read stage's first work units, read while Beam starts.

The embedded runner's start (Python's and Beam's imports, the graph, the runner's first stages) holds one core
for most of a second before a file is read, while the other core waits: at 80M rows, a tenth of the import.
A head start is a process forked before Beam is loaded that reads the files of the first work units (the
command line gives it one unit a worker) meanwhile, in one thread (the start keeps the other core), into a
folder of its own: each file's run tables as an Arrow IPC file, and its format, lines and rejects beside it,
written last. The read stage takes a file from there (``take``) instead of reading it, when the head start read
the same file, unchanged, with the same settings; a file it did not read, or failed to read, is read by the
stage itself, so nothing depends on the head start but the time, and an input's errors are reported as ever.

Each file is claimed by whichever comes to it first: a file the stage asks for before the head start began it,
the stage reads, and the head start passes it by. The head start stops once it has read HEAD_START_BYTES of
compressed input, which bounds its folder, and hands over the pieces it read of the file it stopped in and where
it stopped (a decompressed offset, the start of a line). A file the stage asks for while the head start is
reading it is read to its end when it fits in what is left of that limit: the waiting worker's core is the head
start's meanwhile. One that does not is cut short at the end of the piece being read (files of 100 MiB, too
large for the head start before: the stage read them all, and one core was idle for the first half second).
The rest of the file it stopped in, the head start decompresses for the stage, and reads nothing more
(transforms/handoff.py): the stage parses it as it would its own (or, if the head start is gone before its end,
reads it itself from there, as it reads a file's later slice: transforms/read.py).

Only whole files are read ahead (a sliced file's slices are read by one worker, each continuing the reader
the slice before it left: transforms/read.py). Forking is safe that early: Beam and its gRPC threads are not
loaded yet (the command line begins none once they are), and the process runs the kernel and isal only.
"""

import contextlib
import ctypes
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time

import pyarrow as pa

from ngramflow.transforms.handoff import HandedOverReader, SharedText
from ngramflow.transforms.kernel import Collapsed
from ngramflow.transforms.lines import LineReader, ReadSettings, collapsed_pieces
from ngramflow.transforms.pools import name_for_the_os
from ngramflow.transforms.sizing import HEAD_START_BYTES, release_freed_memory

#: How often the read stage looks again for a file the head start is still reading.
POLL_SECONDS = 0.002


def files_to_read(units: list[list], workers: int) -> list[str]:
    """The files a head start reads of the read stage's work UNITS (in their order): those of the first unit
    of each of the WORKERS, which the embedded runner deals in turn (a head start that read one worker's first
    unit alone would have that worker end early and the other late), if they are whole files; else none."""
    first = units[:workers]
    if not all(slices == 1 for unit in first for *_, slices in unit):
        return []
    return [path for unit in first for path, *_ in unit]


def _same_reading(a: ReadSettings, b: ReadSettings) -> bool:
    """Whether files read with settings A and B give the same pieces (progress and slices aside)."""
    return (a.format, a.policy, a.keep_years) == (b.format, b.policy, b.keep_years)


def _written(folder: str, index: int, kind: str) -> str:
    """Where the head start leaves its INDEXth file's run tables (KIND "arrow") or the rest ("pieces"), and
    where the stage asks it to stop reading the file ("stop")."""
    return os.path.join(folder, f"{index}.{kind}")


def _claimed(folder: str, index: int) -> bool:
    """Claim the INDEXth file for its reader: True for the first to claim it, the head start (before it reads
    it) or the read stage (asking for it before the head start began it), False for the other."""
    try:
        os.close(os.open(_written(folder, index, "claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _identity(path: str) -> tuple:
    """What tells a file from the same path changed since: its inode, size and modification time."""
    stat = os.stat(path)
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


class HeadStart:
    """A process reading FILES (paths, in order) with SETTINGS into FOLDER, and what the read stage has taken
    of it. ``begin`` makes one; ``close`` ends it."""

    def __init__(self, pid: int, folder: str, files: list[str], settings: ReadSettings, text: SharedText):
        self.pid, self.folder, self.files, self.settings, self.text = pid, folder, files, settings, text
        self.exited, self.lock = False, threading.Lock()  # the stage's workers, threads, ask at once
        self.asked, self.taken = set(), []  # the files the read stage asked for, and those it took from here

    @classmethod
    def begin(cls, files: list[str], settings: ReadSettings) -> "HeadStart":
        folder = tempfile.mkdtemp(prefix="ngramflow-head-start-")
        sys.stdout.flush()
        sys.stderr.flush()
        parent = os.getpid()
        try:
            text = SharedText()
            pid = os.fork()
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if pid == 0:  # the head start: never returns into the caller's code
            code = 1
            try:
                _die_with(parent)
                name_for_the_os("head-start")
                text.in_head_start()
                _read_ahead(files, settings, folder, text)
                code = 0
            finally:
                os._exit(code)
        text.in_stage()
        return cls(pid, folder, files, settings, text)

    def _reaped(self) -> bool:
        """Whether the process has exited (and is reaped: by one thread only)."""
        with self.lock:
            if not self.exited:
                self.exited = os.waitpid(self.pid, os.WNOHANG)[0] != 0
            return self.exited

    def take(self, path: str, settings: ReadSettings):
        """(format, [(number of the first line, lines, Collapsed, compressed bytes read by its end)] of its
        pieces, the decompressed offset where the stage reads on or None at the file's end, and the reader of the
        rest that the head start hands over from there, or None) of the file PATH read
        with SETTINGS, as far as the head start read it (waiting for it if it is reading it: asked to stop, it
        stops at the end of a piece if the file is too large to read whole); None for a
        file it does not hold: not one of its files, read with other settings, changed since, taken before, not
        begun yet (the head start then passes it by), or not read (the head start failed or was ended)."""
        with self.lock:
            if path not in self.files or path in self.asked or not _same_reading(settings, self.settings):
                return None
            self.asked.add(path)
        index = self.files.index(path)
        pieces_file = _written(self.folder, index, "pieces")
        try:
            if _claimed(self.folder, index):  # not begun: the stage reads it now, and the head start passes it by
                return None
            if not os.path.exists(pieces_file):  # being read: cut short, if too large to read whole
                os.close(os.open(_written(self.folder, index, "stop"), os.O_CREAT | os.O_WRONLY))
        except OSError:  # the folder gone (a cleaner of temporary files): nothing to take from it
            return None
        while not os.path.exists(pieces_file):
            if self._reaped() and not os.path.exists(pieces_file):  # exited without it (or wrote it just before)
                return None
            time.sleep(POLL_SECONDS)
        with open(pieces_file, "rb") as fh:
            identity, fmt, pieces, resume = pickle.load(fh)
        if identity != _identity(path):
            return None
        tables = _written(self.folder, index, "arrow")
        runs = pa.ipc.open_file(pa.memory_map(tables)) if pieces else None
        # Mapped: the tables' pages live as long as the tables do, not the folder (which may be in memory).
        os.remove(tables)
        read, at = [], 0
        for first_line, lines, dropped, ascending, batches, rejects, compressed in pieces:
            table = pa.Table.from_batches([runs.get_batch(i) for i in range(at, at + batches)], runs.schema)
            read.append((first_line, lines, Collapsed(table, dropped, rejects, ascending, lines), compressed))
            at += batches
        self.taken.append(path)
        rest = None
        if resume is not None:
            first_line, lines, *_ = read[-1]  # it stops after a piece
            rest = HandedOverReader(path, fmt, self.text, resume, first_line + lines)
        return fmt, read, resume, rest

    def close(self) -> None:
        """End the process if it is still reading, and remove its folder (tables taken from it stay readable:
        their files are mapped)."""
        if not self._reaped():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with self.lock:
                os.waitpid(self.pid, 0)
                self.exited = True
        self.text.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _die_with(parent: int) -> None:
    """Have the kernel end this process when PARENT ends (Linux), so that a killed import leaves none behind."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent ended before the request was made
        os._exit(1)


def _read_ahead(files: list[str], settings: ReadSettings, folder: str, text: SharedText) -> None:
    """Read FILES in order with SETTINGS, on this thread alone, but for those the read stage claimed first, until
    HEAD_START_BYTES of compressed input are read in all, a file too large for what is left of them only until the
    stage asks for it; for each, its run tables into N.arrow and then (its identity, its format, its pieces: first
    line, lines, dropped rows, ascending, batches in N.arrow, rejects, compressed bytes read by its end; the
    decompressed offset it stopped at, None at the file's end) into N.pieces. The rest of a file it stopped in, it
    decompresses into TEXT for the stage (transforms/handoff.py), and reads no further."""
    spent, limit = 0, HEAD_START_BYTES
    for index, path in enumerate(files):
        if spent >= limit:
            return
        if not _claimed(folder, index):  # the read stage came to it first
            continue
        identity = _identity(path)
        pieces, writer, resume = [], None, None
        _, size, _ = identity
        whole = spent + size <= limit  # read to its end, asked for or not
        with (contextlib.closing(LineReader(path, settings.format, pool=None)) as reader,
              pa.OSFile(_written(folder, index, "arrow"), "wb") as sink,
              contextlib.closing(collapsed_pieces(reader, None, settings)) as read):
            for first_line, lines, collapsed in read:
                if writer is None:
                    writer = pa.ipc.new_file(sink, collapsed.runs.schema)
                batches = collapsed.runs.to_batches()
                for batch in batches:
                    writer.write_batch(batch)
                pieces.append((first_line, lines, collapsed.dropped, collapsed.ascending, len(batches),
                               collapsed.rejects, reader.compressed))
                # Read on? The offset after this piece is where the stage would begin (the piece after it is
                # collapsed already, and is the stage's to read again).
                asked = not whole and os.path.exists(_written(folder, index, "stop"))
                if spent + reader.compressed >= limit or asked:
                    resume = reader.offset
                    break
            if writer is not None:
                writer.close()
            fmt = reader.format
            spent += reader.compressed
            written = _written(folder, index, "pieces")
            with open(written + ".tmp", "wb") as fh:
                pickle.dump((identity, fmt, pieces, resume), fh)
            os.replace(written + ".tmp", written)
            if resume is not None:
                read.close()  # no piece of it is being collapsed
                del collapsed
                pa.default_memory_pool().release_unused()  # the tables' memory, while it hands over
                release_freed_memory()
                text.hand_over(reader)
                return


#: The head start of this process's import, if it has one: the read stage's DoFns, threads of this process on
#: the embedded runner, take files from it.
_RUNNING: HeadStart | None = None


@contextlib.contextmanager
def reading(files: list[str], settings: ReadSettings):
    """A head start reading FILES while the block runs, ended when it ends (None where one cannot begin)."""
    global _RUNNING
    try:
        head = HeadStart.begin(files, settings)
    except OSError:  # no room for its folder, no process to spare: the import reads every file itself
        yield None
        return
    _RUNNING = head
    try:
        yield head
    finally:
        _RUNNING = None
        head.close()


def take(path: str, settings: ReadSettings):
    """HeadStart.take of the head start running in this process, or None."""
    head = _RUNNING
    return None if head is None else head.take(path, settings)
