"""Run a command and measure its wall time, CPU time and the peak RSS of its whole process tree."""

import argparse
import os
import resource
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass
class Measurement:
    wall_seconds: float
    peak_rss_bytes: int
    returncode: int
    output: str
    # User + system time of the command and the descendants it waited for: unlike wall time, barely
    # changed by other jobs sharing the machine.
    cpu_seconds: float = 0.0


def tree_pids(root: int) -> list[int]:
    """ROOT and every process descended from it now (the head start of an import among them)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(children.get(pid, []))
    return pids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss(root: int) -> int:
    """Resident memory of ``root`` and all its descendants now."""
    return sum(map(_rss, tree_pids(root)))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], env: dict | None = None, interval: float = 0.05, cwd: str | None = None) -> Measurement:
    """Run COMMAND (in folder CWD) and measure it (one command at a time per process: CPU time is this
    process's children's, before and after)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    return Measurement(wall, peak, proc.returncode, output, _children_cpu() - cpu_before)


def warmed(files: list[str]) -> None:
    """Read FILES once, so that the machine's page cache holds them: else the first contender on a corpus,
    isal, is charged for reading it from disk (after the tests had run: isal 16.95 s on the 2012 1-grams' 356 MB,
    where 1.5-2 s is usual, and DuckDB after it 26.95 s as ever; a host whose reclaim drops pages read minutes
    before, as DAMON's does, charged isal 4.9-7.0 s for files it reads in 2.2 s: BENCHMARKS.md, issue 16's
    forty-seventh round)."""
    for path in files:
        with open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass


def dropped(files: list[str]) -> None:
    """FILES' pages out of the page cache (written out first: the kernel drops clean pages alone)."""
    os.sync()
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def timed_calls(function, seconds: list[float]):
    """FUNCTION, appending the seconds each call takes to SECONDS (a benchmark's probe in its own process)."""

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    return timed


def command_to_sample(doc: str, argv=None, by_thread: bool = False) -> argparse.Namespace:
    """The command line of a benchmark that samples a command as it runs (benchmarks/idle.py, memory.py), whose
    help is DOC: .command (after --) and .interval (seconds between samples); with BY_THREAD, .threads too."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    if by_thread:
        parser.add_argument("--threads", action="store_true",
                            help="also the CPU of each thread of the command's processes, over each interval")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        parser.error("no command to run")
    return args
