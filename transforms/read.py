"""Read n-gram files: streaming decompression, parsing, per-file run collapse.

Each input file is read as a stream (never whole into memory). Rows of one
n-gram are consecutive in Google's files, so consecutive rows with the same
output key are merged while reading and emitted as one partial accumulator:
the shuffle that follows carries one element per n-gram and file, not one per
year row.
"""

import io
import itertools
import json
import os
import time
import zlib
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from isal import igzip, isal_zlib

from schemas import RAW_LIMIT
from transforms import counts, formats
from transforms.filters import RowPolicy

GZIP_MAGIC = b"\x1f\x8b"
_READ_BUFFER = 1 << 20
_CORRUPT_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)
_PROGRESS_EVERY = 100_000


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


def _open_lines(path: str):
    """A binary line stream of the decompressed file and its compressed byte stream."""
    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    if raw.read(2) == GZIP_MAGIC:
        raw.seek(0)
        return io.BufferedReader(igzip.GzipFile(fileobj=raw, mode="rb"), _READ_BUFFER), raw
    raw.seek(0)
    return io.BufferedReader(raw, _READ_BUFFER) if not isinstance(raw, io.BufferedReader) else raw, raw


def verify_readable(path: str) -> str | None:
    """Decompress a whole file, checking gzip CRCs and lengths; the problem, or None."""
    try:
        lines, raw = _open_lines(path)
        with raw, lines:
            while lines.read(_READ_BUFFER):
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


class ReadNgramFile(beam.DoFn):
    """(path, size) -> (ngram, accumulator) per run of rows; rejects and file stats on the side."""

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
                yield beam.pvalue.TaggedOutput(self.FILE_STATS, stats)
                return
        try:
            yield from self._read(path, size, stats)
        except _CORRUPT_ERRORS as err:
            raise InputFileError(path, f"corrupt or truncated gzip ({err}); "
                                 "the output is marked incomplete. Use --on-corrupt-file skip to "
                                 "record such files as skipped and go on") from None
        yield beam.pvalue.TaggedOutput(self.FILE_STATS, stats)

    def _read(self, path, size, stats):
        settings = self.settings
        policy, keep_years = settings.policy, settings.keep_years
        progress = _Progress(settings.progress_dir, path, size)
        lines, raw = _open_lines(path)
        with raw, lines:
            head = list(itertools.islice(lines, formats.DETECT_LINES))
            fmt = settings.format or formats.detect_format(head)
            if fmt is None:
                if not any(line.strip() for line in head):
                    stats["format"] = "empty"
                    return
                raise InputFileError(path, f"no line among the first {len(head)} is in a known format "
                                     f"({', '.join(formats.FORMATS)}); pass --format to force one")
            stats["format"] = fmt
            parse = formats.PARSERS[fmt]
            run_key, run_acc = None, None
            lineno = 0
            for lineno, raw_line in enumerate(itertools.chain(head, lines), 1):
                if lineno % _PROGRESS_EVERY == 0:
                    progress.update(lineno, raw.tell())
                try:
                    tokens, series = parse(formats.decode(raw_line))
                except formats.Malformed as bad:
                    stats["rows_rejected"] += 1
                    yield beam.pvalue.TaggedOutput(self.REJECTS, {
                        "file": path, "line": lineno, "reason": str(bad), "raw": raw_line.rstrip(b"\r\n")[:RAW_LIMIT]})
                    continue
                key = policy.key(tokens)
                series = policy.years(series) if key is not None else ()
                if not series:
                    stats["rows_filtered"] += 1
                    continue
                acc = counts.accumulate(series, keep_years)
                if key == run_key:
                    run_acc = counts.merge(run_acc, acc)
                    continue
                if run_key is not None:
                    stats["runs"] += 1
                    yield run_key, run_acc
                run_key, run_acc = key, acc
            if run_key is not None:
                stats["runs"] += 1
                yield run_key, run_acc
            stats["rows_read"] = lineno
            progress.update(lineno, raw.tell(), done=True)


class ReadNgramFiles(beam.PTransform):
    """(path, size) pairs -> tagged outputs: partial counts per n-gram, rejects, file stats."""

    def __init__(self, settings: ReadSettings):
        super().__init__()
        self.settings = settings

    def expand(self, files):
        return (
            files
            # One file is one unit of work; spread them over the workers.
            | "Spread files over workers" >> beam.Reshuffle()
            | "Parse rows and collapse runs" >> beam.ParDo(ReadNgramFile(self.settings)).with_outputs(
                ReadNgramFile.REJECTS, ReadNgramFile.FILE_STATS, main="counts")
        )
