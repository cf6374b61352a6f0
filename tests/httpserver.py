"""A loopback HTTP file server with Range support and scripted faults, for tests.

    with FaultyServer() as server:
        url = server.add("/books/x.gz", data)
        server.script("/books/x.gz", Drop(after=1000), Status(503))
        ...  # first GET is cut after 1000 body bytes, the second gets 503, then normal
        server.requests_for("/books/x.gz")  # [Request(method, path, range), ...]

Each scripted fault is used by exactly one request to its path, in order;
``cut_short`` cuts every answer for a path instead, and ``add_index`` serves
an index page linking whatever it is given. Paths are matched as sent, still
percent-encoded.
The server binds 127.0.0.1 on a free port and serves from a daemon thread;
``stop()`` (or leaving the ``with``) shuts it down.
"""

from __future__ import annotations

import collections
import hashlib
import html
import http.server
import re
import socket
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None


class Fault:
    """One scripted misbehaviour, consumed by one request."""


@dataclass(frozen=True)
class Drop(Fault):
    """Send the headers and ``after`` body bytes, then close the connection."""

    after: int


@dataclass(frozen=True)
class Status(Fault):
    """Answer with this status and no body (``Retry-After`` if given)."""

    code: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Corrupt(Fault):
    """Serve the file with the byte at absolute ``offset`` inverted."""

    offset: int


@dataclass(frozen=True)
class Change(Fault):
    """Replace the file (new size and ETag) before answering normally."""

    data: bytes


@dataclass(frozen=True)
class IgnoreRange(Fault):
    """Answer 200 with the whole file even when a Range was asked for."""


@dataclass(frozen=True)
class _Cut:
    after: int
    ignore_range: bool


@dataclass
class _File:
    data: bytes
    content_type: str
    etag: str


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class FaultyServer:
    def __init__(self, chunk: int = 64 * 1024):
        self.chunk = chunk
        self.lock = threading.Lock()
        self.files: dict[str, _File] = {}
        self.scripts: dict[str, collections.deque[Fault]] = collections.defaultdict(collections.deque)
        self.delays: dict[str, float] = {}
        self.cuts: dict[str, _Cut] = {}
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def add(self, path: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        with self.lock:
            self.files[path] = _File(data, content_type, _etag(data))
        return self.url(path)

    def script(self, path: str, *faults: Fault) -> None:
        with self.lock:
            self.scripts[path].extend(faults)

    def slow(self, path: str, seconds_per_chunk: float) -> None:
        """Pause this long after each chunk of ``path`` (0 to stop pausing)."""
        with self.lock:
            self.delays[path] = seconds_per_chunk

    def add_index(self, path: str, hrefs: list[str]) -> str:
        """Serve an HTML page at ``path`` with one link to each of ``hrefs``, as written."""
        page = "".join(f'<a href="{html.escape(h)}">{html.escape(h)}</a>\n' for h in hrefs)
        return self.add(path, page.encode(), "text/html")

    def cut_short(self, path: str, after: int, ignore_range: bool = False) -> None:
        """From now on close every answer for ``path`` after ``after`` body bytes, as ``Drop`` does once.

        With ``ignore_range`` every answer is also a 200 from byte 0, as ``IgnoreRange`` gives once.
        """
        with self.lock:
            self.cuts[path] = _Cut(after, ignore_range)

    def requests_for(self, path: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def start(self) -> FaultyServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> FaultyServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _etag(data: bytes) -> str:
    return '"' + hashlib.sha1(data).hexdigest()[:16] + '"'


def _handler_for(server: FaultyServer):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            path = self.path.split("?")[0]
            asked = self.headers.get("Range")
            with server.lock:
                server.requests.append(Request(self.command, path, asked))
                fault = server.scripts[path].popleft() if server.scripts.get(path) else None
                if isinstance(fault, Change):
                    server.files[path] = _File(fault.data, server.files[path].content_type, _etag(fault.data))
                f = server.files.get(path)
                delay = server.delays.get(path, 0.0)
                cut = server.cuts.get(path)
            if isinstance(fault, Status):
                return self._empty(fault.code, {"Retry-After": fault.retry_after} if fault.retry_after else {})
            if f is None:
                return self._empty(404)
            data, start, status = f.data, 0, 200
            headers = {"Content-Type": f.content_type, "ETag": f.etag, "Accept-Ranges": "bytes"}
            match = _RANGE.fullmatch(asked or "")
            if match and not (isinstance(fault, IgnoreRange) or (cut and cut.ignore_range)):
                start = int(match[1])
                end = min(int(match[2]) + 1 if match[2] else len(data), len(data))
                if start >= len(data):
                    return self._empty(416, {"Content-Range": f"bytes */{len(data)}"})
                headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
                data, status = data[start:end], 206
            if isinstance(fault, Corrupt) and start <= fault.offset < start + len(data):
                i = fault.offset - start
                data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            limit = fault.after if isinstance(fault, Drop) else cut.after if cut else len(data)
            if body:
                self._send_body(data[:limit], delay)
            if isinstance(fault, Drop) or cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

        def _send_body(self, data: bytes, delay: float) -> None:
            try:
                for i in range(0, len(data), server.chunk):
                    self.wfile.write(data[i : i + server.chunk])
                    self.wfile.flush()
                    if delay and server.stopping.wait(delay):
                        break
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _empty(self, code: int, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
