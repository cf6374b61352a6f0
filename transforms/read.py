"""Read n-gram files: streaming decompression, chunked parsing, run collapse.

Each input file is read as a stream, in chunks of whole lines (memory does not
depend on the file's size). Each chunk is parsed into Arrow (transforms/rows.py)
and its consecutive rows of one n-gram collapsed into runs (transforms/runs.py):
what leaves this stage is a few tables per file, one row per n-gram.
"""

import hashlib
import json
import os
import time
import zlib
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from isal import igzip, isal_zlib

from transforms import formats, rows, runs
from transforms.filters import RowPolicy

GZIP_MAGIC = b"\x1f\x8b"
_CORRUPT_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)
#: Decompressed bytes parsed at once: large enough for Arrow to run at full speed,
#: small enough to keep a worker's memory flat.
CHUNK_BYTES = 8 << 20


class InputFileError(RuntimeError):
    """A whole input file is unusable: corrupt gzip, unreadable, unknown format.

    The message starts with ``MARKER`` so the command line can find it inside
    the runner's wrapped exceptions and show it without a stack trace.
    """

    MARKER = "ngramflow input error: "

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


def _open(path: str):
    """(decompressed byte stream, compressed byte stream) of a gzip or plain file."""
    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    gzipped = raw.read(2) == GZIP_MAGIC
    raw.seek(0)
    return (igzip.GzipFile(fileobj=raw, mode="rb") if gzipped else raw), raw


def verify_readable(path: str) -> str | None:
    """Decompress a whole file, checking gzip CRCs and lengths; the problem, or None."""
    try:
        data, raw = _open(path)
        with raw, data:
            while data.read(CHUNK_BYTES):
                pass
    except _CORRUPT_ERRORS as err:
        return f"corrupt or truncated gzip ({err})"
    return None


class Progress:
    """A worker's running totals in a small JSON file that the command line polls.

    One file per reading DoFn instance, rewritten at most every WRITE_EVERY
    seconds and when a file is done, so small files cost no extra writes.
    """

    WRITE_EVERY = 0.5

    def __init__(self, progress_dir: str | None):
        self.target = None
        if progress_dir:
            self.target = os.path.join(progress_dir, f"worker-{os.getpid()}-{id(self):x}.json")
        self.done = {"files_done": 0, "rows": 0, "bytes": 0}
        self.current = {"rows": 0, "bytes": 0}
        self.written = 0.0

    def update(self, rows: int, compressed_bytes: int):
        self.current = {"rows": rows, "bytes": compressed_bytes}
        if time.time() - self.written >= self.WRITE_EVERY:
            self._write()

    def file_done(self, rows: int, size: int):
        self.done = {"files_done": self.done["files_done"] + 1, "rows": self.done["rows"] + rows,
                     "bytes": self.done["bytes"] + size}
        self.current = {"rows": 0, "bytes": 0}
        self._write()

    def _write(self):
        if self.target is None:
            return
        state = {"files_done": self.done["files_done"], "rows": self.done["rows"] + self.current["rows"],
                 "bytes": self.done["bytes"] + self.current["bytes"]}
        tmp = self.target + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(state, fh)
        os.replace(tmp, self.target)
        self.written = time.time()


def chunks(stream, first_block: bytes):
    """(number of the first line, number of lines, bytes) of consecutive pieces of whole lines."""
    number, carry, block = 1, b"", first_block
    while block:
        data = carry + block
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            lines = data.count(b"\n", 0, cut)
            yield number, lines, data[:cut]
            number += lines
        block = stream.read(CHUNK_BYTES)
    if carry:
        yield number, 1, carry


def file_id(path: str) -> str:
    """A short name for an input file, stable across runs, for the files written about it."""
    return hashlib.sha1(path.encode()).hexdigest()[:16]


def pack_files(files, target_bytes: int) -> list[list]:
    """Group (path, size) pairs, in order, into work units of about ``target_bytes``.

    Small files read one per element would cost more in per-element overhead
    than in reading; a large file stays a unit of its own.
    """
    groups, current, current_bytes = [], [], 0
    for path, size in files:
        if current and current_bytes + size > target_bytes:
            groups.append(current)
            current, current_bytes = [], 0
        current.append((path, size))
        current_bytes += size
    return groups + ([current] if current else [])


class ReadNgramFile(beam.DoFn):
    """A group of (path, size) -> run tables (transforms/runs.py); named reject tables and file stats on the side.

    Runs of consecutive files are buffered up to EMIT_RUNS rows, so small files
    do not each cost an element downstream.
    """

    REJECTS = "rejects"
    FILE_STATS = "file_stats"
    EMIT_RUNS = 1 << 18

    def __init__(self, settings: ReadSettings):
        self.settings = settings
        self.progress = None

    def setup(self):
        self.progress = Progress(self.settings.progress_dir)

    def process(self, group):
        buffered, buffered_rows, all_stats = [], 0, []
        for path, size in group:
            stats = {"path": path, "size": size, "format": None, "rows_read": 0, "rows_rejected": 0,
                     "rows_filtered": 0, "runs": 0, "status": "ok", "reason": None}
            all_stats.append(stats)
            problem = verify_readable(path) if self.settings.on_corrupt == "skip" else None
            if problem:
                stats.update(status="skipped", reason=problem)
                continue
            try:
                for output in self._read(path, size, stats):
                    if isinstance(output, beam.pvalue.TaggedOutput):
                        yield output
                        continue
                    buffered.append(output)
                    buffered_rows += output.num_rows
                    if buffered_rows >= self.EMIT_RUNS:
                        yield pa.concat_tables(buffered)
                        buffered, buffered_rows = [], 0
            except _CORRUPT_ERRORS as err:
                raise InputFileError(path, f"corrupt or truncated gzip ({err}); "
                                     "the output is marked incomplete. Use --on-corrupt-file skip to "
                                     "record such files as skipped and go on") from None
            self.progress.file_done(stats["rows_read"], size)
        if buffered:
            yield pa.concat_tables(buffered)
        yield beam.pvalue.TaggedOutput(self.FILE_STATS, (file_id(group[0][0]), all_stats))

    def _read(self, path, size, stats):
        settings = self.settings
        data, raw = _open(path)
        with raw, data:
            first_block = data.read(CHUNK_BYTES)
            fmt = settings.format or formats.detect_format(first_block.split(b"\n", formats.DETECT_LINES))
            if fmt is None:
                if not first_block.strip():
                    stats["format"] = "empty"
                    return
                raise InputFileError(path, f"no line among the first {formats.DETECT_LINES} is in a known "
                                     f"format ({', '.join(formats.FORMATS)}); pass --format to force one")
            stats["format"] = fmt
            for first_line, lines, chunk in chunks(data, first_block):
                table, starts, rejected = rows.parse_chunk(chunk, lines, fmt, path, first_line)
                found, dropped = runs.collapse(table, starts, settings.policy, settings.keep_years)
                stats["rows_read"] += lines
                stats["rows_rejected"] += rejected.num_rows
                stats["rows_filtered"] += dropped
                stats["runs"] += found.num_rows
                if rejected.num_rows:
                    name = f"part-{file_id(path)}-{first_line:012d}"
                    yield beam.pvalue.TaggedOutput(self.REJECTS, (name, rejected))
                if found.num_rows:
                    yield found
                self.progress.update(stats["rows_read"], raw.tell())


class ReadNgramFiles(beam.PTransform):
    """Groups of (path, size) (see pack_files) -> tagged outputs: run tables ("runs"),
    named reject tables, and per group a named list of file stats."""

    def __init__(self, settings: ReadSettings):
        super().__init__()
        self.settings = settings

    def expand(self, files):
        return (
            files
            # One file is one unit of work; spread them over the workers.
            | "Spread files over workers" >> beam.Reshuffle()
            | "Parse rows and collapse runs" >> beam.ParDo(ReadNgramFile(self.settings)).with_outputs(
                ReadNgramFile.REJECTS, ReadNgramFile.FILE_STATS, main="runs")
        )
