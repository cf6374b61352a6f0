"""Resumable, verified downloads of corpus files into a local cache.

A URL is cached at ``CACHE/HOST/PATH`` (``HOST`` with ``:`` replaced by
``_``), so Google's file names survive and files of different languages that
share a name (``2-00000-of-00006.gz``) do not collide. While a file is being
fetched it lives in ``NAME.part`` next to ``NAME.part.meta``, which records the
ETag, Last-Modified and size the remote file had when the ``.part`` began; a
later run resumes with an HTTP Range request only while those still match.
A file gets its final name (atomically, with ``os.replace``) only after its
length and, for ``.gz``, the whole gzip stream (every member's CRC-32 and
length) have been checked, so a file under its final name is always complete
and is never fetched again.

A URL maps to a cache path only through its host name and its
percent-decoded path segments, each a plain name (not empty, ``.`` or ``..``,
without ``/``, ``\\`` or NUL), and only when that path, symlinks followed,
lies inside the cache; any other URL is refused (UnsafeURL), so neither a
typo nor a hostile index page or server can make a download write elsewhere.

Only the standard library is used for HTTP; the gzip check uses isal, which
the project already depends on, because it inflates several times faster.
"""

from __future__ import annotations

import concurrent.futures
import email.utils
import http.client
import json
import os
import random
import re
import shutil
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TextIO

from isal import isal_zlib

from ngramflow.corpus.catalog import (BASE_URL, CatalogError, CorpusFile, files_from_index, index_url, is_corpus_spec,
                                      parse_corpus_spec)

CHUNK = 1 << 20
USER_AGENT = "ngramflow-corpus-download/1"

# Defaults of download(), which `corpus download` shows and `import` uses.
PARALLEL = 4
RETRIES = 8
RETRY_TIME = 3600.0  # an hour of failures on one file; its .part stays for the next run
TIMEOUT = 60.0


def exponential_backoff(failures: int, base: float = 1.0, cap: float = 120.0) -> float:
    """Seconds to wait after the n-th consecutive failure: doubling, capped, jittered.

    The jitter keeps parallel workers that failed together from retrying in lockstep.
    """
    return min(cap, base * 2 ** (failures - 1)) * random.uniform(0.5, 1.0)


@dataclass
class FileResult:
    url: str
    path: str  # the final path in the cache
    status: str = "cached"  # "cached" (already there), "downloaded" or "failed"
    bytes_fetched: int = 0  # body bytes received in this run
    attempts: int = 0  # HTTP requests made
    error: str | None = None


@dataclass
class DownloadReport:
    results: list[FileResult]
    elapsed: float

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in ("downloaded", "cached", "failed")}
        fetched = sum(r.bytes_fetched for r in self.results)
        lines = [
            f"{counts['downloaded']} downloaded, {counts['cached']} already cached, {counts['failed']} failed; "
            f"{_size(fetched)} in {_duration(self.elapsed)}"
        ]
        lines += [f"FAILED {r.url}: {r.error}" for r in self.failed]
        return "\n".join(lines)


class DownloadError(RuntimeError):
    """Some inputs could not be fetched; ``report`` says which and why."""

    def __init__(self, report: DownloadReport):
        super().__init__(report.summary())
        self.report = report


class CorruptFile(Exception):
    """The bytes on disk are not a complete, intact copy."""


class _Retry(Exception):
    def __init__(self, reason: str, delay: float | None = None):
        super().__init__(reason)
        self.delay = delay  # None: use the backoff


class _Fatal(Exception):
    """An answer that retrying will not change (404, 403, ...)."""


class _Stopped(Exception):
    pass


class UnsafeURL(CatalogError):
    """A URL that maps to no file inside the cache: a mistake, or a hostile index page or server.

    A CatalogError, so every command that reports a bad spec in one line with
    exit code 2 (``corpus download``, ``import``) reports a bad URL the same way.
    """

    def __init__(self, url: str, reason: str):
        super().__init__(f"refusing {url}: {reason}")
        self.reason = reason


# Letters, digits, '-' and '_' in dot-separated labels, or an IPv6 address:
# nothing that could act as a path separator or a '.'/'..' directory.
_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*|[0-9a-f:.]*:[0-9a-f:.]*")


def cache_parts(url: str) -> list[str]:
    """The directory names and file name, under the cache, of ``url``; raises UnsafeURL.

    Segments are checked after percent-decoding, because ``%2e%2e`` and
    ``%2F`` become ``..`` and ``/`` only then.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL(url, "not an http(s) URL")
    host = parts.hostname or ""
    if not _HOST.fullmatch(host):
        raise UnsafeURL(url, f"{host!r} is not a host name")
    try:
        port = parts.port
    except ValueError:
        raise UnsafeURL(url, "invalid port") from None
    segments = [_decoded_segment(url, s) for s in parts.path.split("/")[1:]]
    if not segments:
        raise UnsafeURL(url, "it names no file")
    return [host.replace(":", "_") + (f"_{port}" if port else ""), *segments]


def _decoded_segment(url: str, raw: str) -> str:
    try:
        segment = urllib.parse.unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise UnsafeURL(url, f"path segment {raw!r} is not UTF-8 once decoded") from None
    if segment in ("", ".", ".."):
        raise UnsafeURL(url, f"path segment {segment!r} (empty, '.' and '..' are not file or directory names)")
    if any(c in segment for c in "/\\\0"):
        raise UnsafeURL(url, f"path segment {raw!r} decodes to {segment!r}, which holds '/', '\\' or NUL")
    return segment


def cache_path(cache_dir: str | os.PathLike, url: str) -> Path:
    """Where ``url`` is cached (see the module docstring); a query string is not part of it.

    Raises UnsafeURL unless that file, and the work files of its download, resolve
    inside ``cache_dir``: a symlink in the cache must not lead a download elsewhere.
    """
    path = Path(cache_dir, *cache_parts(url))
    root = Path(cache_dir).resolve()
    for p in (path, *_work_files(path)):
        try:
            resolved = p.resolve()
        except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop
            raise UnsafeURL(url, f"cannot resolve {p}: {e}") from None
        if not resolved.is_relative_to(root):
            raise UnsafeURL(url, f"{p} resolves to {resolved}, outside the cache {root}")
    return path


def _work_files(final: Path) -> tuple[Path, Path, Path]:
    """What a download of ``final`` writes next to it: the .part, its .meta and the meta's .tmp."""
    part = final.with_name(final.name + ".part")
    meta = part.with_name(part.name + ".meta")
    return part, meta, _tmp_of(meta)


def _tmp_of(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def verify_file(path: str | os.PathLike, size: int | None) -> None:
    """Raise CorruptFile unless ``path`` has ``size`` bytes and, if ``.gz``, inflates cleanly."""
    path = Path(path)
    actual = path.stat().st_size
    if size is not None and actual != size:
        raise CorruptFile(f"{actual} bytes on disk, the server announced {size}")
    if path.name.removesuffix(".part").endswith(".gz"):
        _verify_gzip(path)


def _verify_gzip(path: Path) -> None:
    if path.stat().st_size == 0:
        raise CorruptFile("empty file")
    inflater = isal_zlib.decompressobj(wbits=31)
    padding = False  # some writers pad after the last member with zero bytes
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            data = chunk
            while data:
                if padding:
                    if data.strip(b"\0"):
                        raise CorruptFile("garbage after the last gzip member")
                    break
                if inflater.eof:  # a member ended; what follows is padding or the next member
                    if data[0] == 0:
                        padding = True
                        continue
                    inflater = isal_zlib.decompressobj(wbits=31)
                try:
                    # max_length bounds memory: a 1 MiB chunk may inflate to gigabytes.
                    inflater.decompress(data, CHUNK)
                    while inflater.unconsumed_tail:
                        inflater.decompress(inflater.unconsumed_tail, CHUNK)
                except isal_zlib.error as e:
                    raise CorruptFile(f"gzip stream damaged: {e}") from None
                data = inflater.unused_data if inflater.eof else b""
    if not (padding or inflater.eof):
        raise CorruptFile("gzip stream ends early (truncated file)")


@dataclass
class _Remote:
    """What identifies one version of the remote file."""

    size: int | None
    etag: str | None
    last_modified: str | None

    @classmethod
    def from_response(cls, headers, size: int | None) -> _Remote:
        return cls(size, headers.get("ETag"), headers.get("Last-Modified"))

    def same_as(self, other: _Remote) -> bool:
        pairs = [(self.size, other.size), (self.etag, other.etag)]
        if not (self.etag and other.etag):
            pairs.append((self.last_modified, other.last_modified))
        return all(a == b for a, b in pairs if a is not None and b is not None)


def _read_meta(meta: Path) -> _Remote | None:
    try:
        return _Remote(**json.loads(meta.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write_meta(meta: Path, remote: _Remote) -> None:
    tmp = _tmp_of(meta)
    tmp.write_text(json.dumps(remote.__dict__))
    os.replace(tmp, meta)


def _discard(*paths: Path) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def _retry_after(value: str | None, cap: float) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), cap)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(when.timestamp() - time.time(), 0.0), cap)


def _content_range(value: str | None) -> tuple[int, int | None]:
    """(first byte, total size or None) of ``bytes FIRST-LAST/TOTAL``."""
    try:
        unit, _, rest = value.partition(" ")
        span, _, total = rest.partition("/")
        if unit != "bytes":
            raise ValueError
        return int(span.split("-")[0]), (None if total == "*" else int(total))
    except (AttributeError, ValueError):
        raise _Retry(f"unusable Content-Range {value!r}") from None


class _Progress:
    """Throttled progress on a stream: one rewritten line on a TTY, periodic lines otherwise."""

    def __init__(self, enabled: bool, total_files: int, stream: TextIO, interval: float | None):
        self.enabled, self.total_files, self.stream = enabled, total_files, stream
        self.tty = enabled and stream.isatty()
        # A log file gets a line per interval, so it needs a longer one than a rewritten TTY line.
        self.interval = interval if interval is not None else (0.5 if self.tty else 10.0)
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.last = 0.0
        self.fetched = 0
        self.finished = 0
        self.active: dict[str, list] = {}  # url -> [name, done, size, t_start, done_at_start]
        self.sizes: dict[str, int] = {}  # every size announced so far, for estimating files not started

    def start(self, url: str, size: int | None, offset: int) -> None:
        with self.lock:
            self.active[url] = [_file_name(url), offset, size, time.monotonic(), offset]
            if size is not None:
                self.sizes[url] = size

    def advance(self, url: str, n: int) -> None:
        with self.lock:
            self.fetched += n
            self.active[url][1] += n
            if self.enabled and time.monotonic() - self.last >= self.interval:
                self._render()

    def note(self, message: str) -> None:
        if self.enabled:
            with self.lock:
                self._line(message)

    def finish(self, url: str, message: str | None) -> None:
        with self.lock:
            self.finished += 1
            self.active.pop(url, None)
            if self.enabled and message:
                self._line(message)

    def close(self) -> None:
        if self.enabled:
            with self.lock:
                elapsed = time.monotonic() - self.t0
                self._line(
                    f"[{self.finished}/{self.total_files} files] {_size(self.fetched)} in {_duration(elapsed)} "
                    f"({_size(self.fetched / max(elapsed, 1e-6))}/s)"
                )

    def _line(self, message: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
        self.stream.write(message + "\n")
        self.last = 0.0
        self.stream.flush()

    def _render(self) -> None:
        now = time.monotonic()
        self.last = now
        rate = self.fetched / max(now - self.t0, 1e-6)
        overall = f"[{self.finished}/{self.total_files} files] {_size(self.fetched)} at {_size(rate)}/s"
        remaining = self._remaining_bytes()
        if remaining is not None and rate > 0:
            overall += f", ETA {_duration(remaining / rate)}"
        parts = [overall]
        for name, done, size, t_start, done0 in self.active.values():
            file_rate = (done - done0) / max(now - t_start, 1e-6)
            if size:
                eta = f" ETA {_duration((size - done) / file_rate)}" if file_rate > 0 else ""
                parts.append(f"{name} {100 * done / size:.0f}% of {_size(size)} {_size(file_rate)}/s{eta}")
            else:
                parts.append(f"{name} {_size(done)} {_size(file_rate)}/s")
        if self.tty:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + " | ".join(parts)[:width])
        else:
            self.stream.write(" | ".join(parts) + "\n")
        self.stream.flush()

    def _remaining_bytes(self) -> float | None:
        """Bytes left: exact for files in flight, the mean known size for files not started."""
        if not self.sizes:
            return None
        in_flight = sum(size - done for _, done, size, _, _ in self.active.values() if size)
        not_started = self.total_files - self.finished - len(self.active)
        return in_flight + not_started * (sum(self.sizes.values()) / len(self.sizes))


class _RetryBudget:
    """When one file stops being retried: after ``retries`` failed attempts in a row
    without real progress, or ``seconds`` after its first failure, whichever comes first.

    Real progress is more bytes on disk than the file ever had: a server that ignores
    Range sends the body from byte 0 again, and bytes fetched twice are no progress.
    The time bound stops a server that makes a little progress per attempt forever.
    """

    def __init__(self, retries: int, seconds: float, held: int):
        self.retries, self.seconds = retries, seconds
        self.furthest = held  # the most bytes of this file ever on disk
        self.failures = 0  # failed attempts in a row without real progress
        self.first_failure: float | None = None

    def failed(self, held: int) -> int:
        """Count a failed attempt that left ``held`` bytes on disk; returns the failures in a row."""
        if self.first_failure is None:
            self.first_failure = time.monotonic()
        if held > self.furthest:
            self.furthest, self.failures = held, 0
        else:
            self.failures += 1
        return self.failures

    def exhausted(self, delay: float) -> str | None:
        """Why not to wait ``delay`` seconds and try again, or None to go on."""
        if self.failures > self.retries:
            return f"gave up after {self.retries} retries without progress"
        spent = time.monotonic() - self.first_failure
        if spent + delay > self.seconds:
            # Waiting would end past the limit: better to say so now than after the wait.
            return f"gave up after {spent:.1f}s of retries (retry time limit {self.seconds:g}s)"
        return None


def _held(part: Path) -> int:
    return part.stat().st_size if part.exists() else 0


class _Downloader:
    def __init__(self, cache_dir, *, retries, retry_time, backoff, progress, timeout, user_agent, max_retry_after,
                 on_cached=None):
        self.cache_dir = Path(cache_dir)
        self.retries = retries
        self.retry_time = retry_time
        self.backoff = backoff
        self.progress = progress
        self.timeout = timeout
        self.user_agent = user_agent
        self.max_retry_after = max_retry_after
        self.stop = threading.Event()
        self.opener = urllib.request.build_opener()
        self.on_cached = on_cached or (lambda _path: None)

    def fetch(self, url: str) -> FileResult:
        try:
            final = cache_path(self.cache_dir, url)
        except UnsafeURL as e:
            # A link read from an index page, or a symlink in the cache (the user's own
            # URLs were checked before anything was fetched): refuse this file only.
            return self._fail(FileResult(url, ""), f"refused: {e.reason}")
        result = FileResult(url, str(final))
        if final.exists():
            self.progress.finish(url, None)
            self.on_cached(str(final))
            return result
        final.parent.mkdir(parents=True, exist_ok=True)
        part, meta, _ = _work_files(final)
        budget = _RetryBudget(self.retries, self.retry_time, _held(part))
        restarted = False
        try:
            while True:
                try:
                    remote = self._transfer(url, part, meta, result)
                    verify_file(part, remote.size)
                    os.replace(part, final)
                    meta.unlink(missing_ok=True)
                    result.status = "downloaded"
                    self.progress.finish(url, f"done   {final.name} ({_size(final.stat().st_size)})")
                    self.on_cached(str(final))
                    return result
                except CorruptFile as e:
                    _discard(part, meta)
                    if restarted:
                        return self._fail(result, f"corrupt twice, deleted: {e}")
                    restarted = True
                    self.progress.note(f"corrupt {final.name}: {e}; downloading it again from scratch")
                except _Retry as e:
                    failures = budget.failed(_held(part))
                    delay = self.backoff(failures) if e.delay is None else e.delay
                    if reason := budget.exhausted(delay):
                        return self._fail(result, f"{reason}: {e}")
                    self.progress.note(f"retry  {final.name}: {e}; again in {delay:.1f}s")
                    if self.stop.wait(delay):
                        raise _Stopped from None
        except _Fatal as e:
            return self._fail(result, str(e))
        except _Stopped:
            return self._fail(result, "interrupted; the .part file is kept for resuming")
        except OSError as e:
            return self._fail(result, f"local I/O error: {e}")

    def _fail(self, result: FileResult, reason: str) -> FileResult:
        result.status, result.error = "failed", reason
        self.progress.finish(result.url, f"FAILED {_file_name(result.url)}: {reason}")
        return result

    def _transfer(self, url: str, part: Path, meta: Path, result: FileResult) -> _Remote:
        """Bring ``part`` to the full remote length, resuming when the remote file is unchanged."""
        known = _read_meta(meta) if part.exists() else None
        offset = part.stat().st_size if known else 0
        if known and known.size is not None:
            if offset == known.size:
                return known  # complete, but not yet verified when the last run stopped
            if offset > known.size:
                _discard(part, meta)
                known, offset = None, 0
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        result.attempts += 1
        try:
            response = self.opener.open(urllib.request.Request(url, headers=headers), timeout=self.timeout)
        except urllib.error.HTTPError as e:
            with e:
                raise self._status_error(e.code, e.reason, e.headers, part, meta) from None
        except (OSError, http.client.HTTPException) as e:
            raise _Retry(f"connection failed: {getattr(e, 'reason', e)}") from None
        with response:
            length = response.headers.get("Content-Length")
            length = int(length) if length and length.isdigit() else None
            if response.status == 206:
                first, total = _content_range(response.headers.get("Content-Range"))
                remote = _Remote.from_response(response.headers, total)
                if known is None or first != offset or not remote.same_as(known):
                    _discard(part, meta)
                    raise _Retry("remote file changed since this download began; starting over", delay=0)
                if remote.size is None:
                    remote.size = known.size
            elif response.status == 200:
                # Also the answer of a server that ignores Range: the body starts at byte 0.
                remote = _Remote.from_response(response.headers, length)
                _discard(part, meta)
                _write_meta(meta, remote)  # before any byte, so a .part never lacks its meta
                offset = 0
            else:
                raise _Retry(f"unexpected HTTP {response.status}")
            self._copy_body(response, part, offset, remote.size, result)
        return remote

    def _copy_body(self, response, part: Path, offset: int, size: int | None, result: FileResult) -> None:
        url = result.url
        self.progress.start(url, size, offset)
        received = offset
        with open(part, "ab" if offset else "wb") as out:
            try:
                while True:
                    if self.stop.is_set():
                        raise _Stopped
                    try:
                        chunk = response.read(CHUNK)
                    except (OSError, http.client.HTTPException) as e:
                        raise _Retry(f"connection lost after {_size(received)}: {e}") from None
                    if not chunk:
                        break
                    out.write(chunk)
                    received += len(chunk)
                    result.bytes_fetched += len(chunk)
                    self.progress.advance(url, len(chunk))
            finally:
                out.flush()
                os.fsync(out.fileno())
        if size is not None and received < size:
            raise _Retry(f"incomplete read: {received} of {size} bytes")

    def _status_error(self, code: int, reason: str, headers, part: Path, meta: Path) -> Exception:
        if code == 416:
            _discard(part, meta)
            return _Retry("HTTP 416 (range not satisfiable); starting over from byte 0", delay=0)
        if code in (429, 503):
            return _Retry(f"HTTP {code} {reason}", _retry_after(headers.get("Retry-After"), self.max_retry_after))
        if code >= 500 or code == 408:
            return _Retry(f"HTTP {code} {reason}")
        return _Fatal(f"HTTP {code} {reason}")


def download(
    urls: Iterable[str],
    cache_dir: str | os.PathLike,
    *,
    parallel: int = PARALLEL,
    retries: int = RETRIES,
    retry_time: float = RETRY_TIME,
    backoff: Callable[[int], float] = exponential_backoff,
    progress: bool | None = None,
    timeout: float = TIMEOUT,
    user_agent: str = USER_AGENT,
    max_retry_after: float = 600.0,
    progress_interval: float | None = None,
    stream: TextIO | None = None,
    on_cached: Callable[[str], None] | None = None,
) -> DownloadReport:
    """Fetch every URL into the cache; failures are reported, never raised.

    ``retries`` bounds consecutive failed attempts without real progress (only
    an attempt that leaves more of the file on disk than ever before resets the
    count; a restart from byte 0 does not), ``retry_time`` the seconds from a
    file's first failure until it is given up, whatever its progress.
    ``backoff(n)`` is the wait after the n-th failure in a row unless the server
    sent ``Retry-After`` (capped at ``max_retry_after`` seconds); a wait that
    would end past ``retry_time`` gives up at once. ``timeout`` applies to connecting and to
    each read. ``progress`` None shows progress only when ``stream`` (default
    stderr) is a TTY; True forces it, False silences it. Progress lines come at
    most every ``progress_interval`` seconds (default 0.5 on a TTY, else 10). ``on_cached(path)`` is
    called for each file once it is verified and under its final name (or was already cached).
    """
    urls = list(dict.fromkeys(urls))
    stream = stream or sys.stderr
    enabled = stream.isatty() if progress is None else progress
    meter = _Progress(enabled, len(urls), stream, progress_interval)
    worker = _Downloader(
        cache_dir,
        retries=retries,
        retry_time=retry_time,
        backoff=backoff,
        progress=meter,
        timeout=timeout,
        user_agent=user_agent,
        max_retry_after=max_retry_after,
        on_cached=on_cached,
    )
    t0 = time.monotonic()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="download")
    try:
        futures = [pool.submit(worker.fetch, url) for url in urls]
        results = [f.result() for f in futures]
    except BaseException:
        # Ctrl-C: let running transfers stop at their next chunk; .part files stay for resuming.
        worker.stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        meter.close()
        raise
    pool.shutdown()
    meter.close()
    return DownloadReport(results, time.monotonic() - t0)


def fetch_text(url: str, timeout: float = TIMEOUT) -> str:
    """A small text resource such as an index page, in one request."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read().decode(response.headers.get_content_charset() or "utf-8", "replace")


def expand_spec(
    spec: str, *, base_url: str = BASE_URL, index_page: str | None = None, from_index: bool = False,
    timeout: float = TIMEOUT
) -> list[CorpusFile]:
    """The files a ``corpus:`` spec names.

    With ``from_index`` (implied by ``index_page``) the listing comes from an
    index page, by default Google's for that export, instead of the catalog.
    """
    parsed = parse_corpus_spec(spec)
    if not (from_index or index_page):
        files = parsed.resolve(base_url=base_url)
        for f in files:
            cache_parts(f.url)  # built on the user's mirror: one the cache cannot hold is a usage error
        return files
    page_url = index_page or index_url(parsed.version, parsed.lang, parsed.order, base_url)
    available = files_from_index(fetch_text(page_url, timeout), page_url, parsed.version, parsed.lang, parsed.order)
    return parsed.resolve(available, base_url=base_url)


def resolve_inputs(
    specs: Iterable[str],
    cache_dir: str | os.PathLike,
    *,
    base_url: str = BASE_URL,
    index_page: str | None = None,
    from_index: bool = False,
    **download_options,
) -> list[str]:
    """Turn inputs into verified local paths, downloading what is not cached yet.

    ``http(s)://`` URLs and ``corpus:`` specs are fetched into ``cache_dir``;
    anything else (local paths, ``gs://`` and other filesystem URLs) passes
    through unchanged. Order is kept and duplicates dropped. Raises UnsafeURL,
    before fetching anything, for a given URL the cache cannot hold, and
    DownloadError, after trying every file, when any could not be fetched
    (a URL read from an index page that the cache cannot hold is refused then).
    """
    inputs: list[tuple[str, str]] = []  # (kind, value)
    for spec in specs:
        if is_corpus_spec(spec):
            files = expand_spec(spec, base_url=base_url, index_page=index_page, from_index=from_index)
            inputs += [("url", f.url) for f in files]
        elif urllib.parse.urlsplit(spec).scheme in ("http", "https"):
            cache_parts(spec)  # the user's own URL: a bad one is a usage error, before any download
            inputs.append(("url", spec))
        else:
            inputs.append(("path", spec))
    inputs = list(dict.fromkeys(inputs))
    urls = [value for kind, value in inputs if kind == "url"]
    if urls:
        report = download(urls, cache_dir, **download_options)
        if not report.ok:
            raise DownloadError(report)
    return [str(cache_path(cache_dir, value)) if kind == "url" else value for kind, value in inputs]


def _file_name(url: str) -> str:
    return Path(urllib.parse.urlsplit(url).path).name


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
