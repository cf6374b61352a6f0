"""Progress of a running import on the terminal.

Each reading worker keeps its running totals in a small JSON file in a scratch
folder (transforms/read.py, Progress); this thread polls that folder and prints files done, rows
read, rows/s and an ETA from the compressed bytes read. Workers on other
machines cannot reach the folder: there the runner's own UI shows progress.
"""

import glob
import json
import os
import sys
import threading
import time

from ngramflow.transforms.read import RANGE_PROGRESS, WORKER_PROGRESS


def _fmt_count(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


class ProgressReporter(threading.Thread):
    def __init__(self, progress_dir: str, total_files: int, total_bytes: int, stream=None,
                 interval: float | None = None):
        super().__init__(daemon=True)
        self.progress_dir, self.total_files, self.total_bytes = progress_dir, total_files, total_bytes
        self.stream = stream or sys.stderr  # the stderr of now, not of when this module was imported
        self.tty = self.stream.isatty()
        self.interval = interval or (1.0 if self.tty else 10.0)
        self.started = time.time()
        self._halt = threading.Event()
        self._last_line = ""

    def _states(self, pattern: str):
        for path in glob.glob(os.path.join(self.progress_dir, pattern)):
            try:
                with open(path) as fh:
                    yield json.load(fh)
            except (OSError, ValueError):  # being replaced right now; next poll sees it
                continue

    def snapshot(self) -> dict:
        rows = done = read_bytes = 0
        for state in self._states(WORKER_PROGRESS):
            rows += state["rows"]
            read_bytes += state["bytes"]
            done += state["files_done"]
        ranges = list(self._states(RANGE_PROGRESS))
        return {"rows": rows, "files_done": done, "bytes": read_bytes, "ranges_done": len(ranges),
                "ranges": ranges[0]["of"] if ranges else None}

    def line(self) -> str:
        snap = self.snapshot()
        elapsed = max(time.time() - self.started, 1e-6)
        text = (f"files {snap['files_done']}/{self.total_files} · {_fmt_count(snap['rows'])} rows · "
                f"{_fmt_count(snap['rows'] / elapsed)} rows/s · {elapsed:.0f}s")
        if 0 < snap["bytes"] < self.total_bytes:
            eta = elapsed * (self.total_bytes - snap["bytes"]) / snap["bytes"]
            text += f" · ETA {eta:.0f}s"
        if snap["ranges"]:
            text += f" · n-gram ranges written {snap['ranges_done']}/{snap['ranges']}"
        return text

    def run(self):
        while not self._halt.wait(self.interval):
            self._print(self.line())

    def _print(self, text: str):
        if text == self._last_line:
            return
        self._last_line = text
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def stop(self):
        self._halt.set()
        self.join()
        if self.tty and self._last_line:
            self.stream.write("\r\033[K")
            self.stream.flush()
