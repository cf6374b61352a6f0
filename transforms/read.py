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
    progress_dir: str | None = None  # where per-file progress is written for the CLI


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


class _Progress:
    """Writes a small JSON file per input file that the command line polls."""

    def __init__(self, progress_dir: str | None, path: str, size: int):
        self.target = None
        if progress_dir:
            name = f"{zlib.crc32(path.encode()):08x}-{os.getpid()}.json"
            self.target = os.path.join(progress_dir, name)
        self.state = {"path": path, "size": size, "rows": 0, "bytes": 0, "done": False}

    def update(self, rows: int, compressed_bytes: int, done: bool = False):
        if self.target is None:
            return
        self.state.update(rows=rows, bytes=compressed_bytes, done=done, time=time.time())
        tmp = self.target + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.state, fh)
        os.replace(tmp, self.target)


def chunks(stream, first_block: bytes):
    """(number of the first line, bytes) of consecutive pieces of whole lines."""
    number, carry, block = 1, b"", first_block
    while block:
        data = carry + block
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            yield number, data[:cut]
            number += data.count(b"\n", 0, cut)
        block = stream.read(CHUNK_BYTES)
    if carry:
        yield number, carry


def file_id(path: str) -> str:
    """A short name for an input file, stable across runs, for the files written about it."""
    return hashlib.sha1(path.encode()).hexdigest()[:16]


class ReadNgramFile(beam.DoFn):
    """(path, size) -> run tables (transforms/runs.py); named reject tables and file stats on the side."""

    REJECTS = "rejects"
    FILE_STATS = "file_stats"

    def __init__(self, settings: ReadSettings):
        self.settings = settings

    def process(self, input_file):
        path, size = input_file
        stats = {"path": path, "size": size, "format": None, "rows_read": 0, "rows_rejected": 0,
                 "rows_filtered": 0, "runs": 0, "status": "ok", "reason": None}
        if self.settings.on_corrupt == "skip":
            problem = verify_readable(path)
            if problem:
                stats.update(status="skipped", reason=problem)
                yield beam.pvalue.TaggedOutput(self.FILE_STATS, (file_id(path), stats))
                return
        try:
            yield from self._read(path, size, stats)
        except _CORRUPT_ERRORS as err:
            raise InputFileError(path, f"corrupt or truncated gzip ({err}); "
                                 "the output is marked incomplete. Use --on-corrupt-file skip to "
                                 "record such files as skipped and go on") from None
        yield beam.pvalue.TaggedOutput(self.FILE_STATS, (file_id(path), stats))

    def _read(self, path, size, stats):
        settings = self.settings
        progress = _Progress(settings.progress_dir, path, size)
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
            for first_line, chunk in chunks(data, first_block):
                table, rejected = rows.parse_chunk(chunk, fmt, path, first_line)
                found, dropped = runs.collapse(table, settings.policy, settings.keep_years)
                stats["rows_read"] += rows.line_count(chunk)
                stats["rows_rejected"] += rejected.num_rows
                stats["rows_filtered"] += dropped
                stats["runs"] += found.num_rows
                if rejected.num_rows:
                    name = f"part-{file_id(path)}-{first_line:012d}"
                    yield beam.pvalue.TaggedOutput(self.REJECTS, (name, rejected))
                if found.num_rows:
                    yield found
                progress.update(stats["rows_read"], raw.tell())
            progress.update(stats["rows_read"], raw.tell(), done=True)


class ReadNgramFiles(beam.PTransform):
    """(path, size) pairs -> tagged outputs: run tables ("runs"), reject tables, file stats."""

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
