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


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss(root: int) -> int:
    """Resident memory of ``root`` and all its descendants now."""
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss(pid)
        todo.extend(tree.get(pid, []))
    return total


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


def timed_calls(function, seconds: list[float]):
    """FUNCTION, appending the seconds each call takes to SECONDS (a benchmark's probe in its own process)."""

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    return timed


def command_to_sample(doc: str, argv=None) -> tuple[list[str], float]:
    """(the command after --, the seconds between samples) of the command line of a benchmark that samples a
    command as it runs (benchmarks/idle.py, memory.py), whose help is DOC."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run")
    return command, args.interval
