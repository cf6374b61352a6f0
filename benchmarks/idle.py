"""How busy a machine's cores are while a command runs, and how much of them idles (BENCHMARKS.md, issue 16's
eighteenth round):

    python -m benchmarks.idle [--interval 0.1] [--threads] -- COMMAND...

Samples the machine's CPU time (/proc/stat), so that every process counts: the command's, its children's and
the head start's (a process of its own, which the command's own CPU ticks leave out). Other jobs count too:
run it on a quiet machine. Prints the wall time, the CPU seconds the machine was busy, those its cores had idle
(cores x wall - busy), and the cores busy in each interval (1.0: one core). Exits with the command's code.

With --threads, also each thread of the command's processes that had 0.05 s of CPU or more: its process, its
name (an import's pools name their threads for the OS: transforms/pools.py), its CPU seconds and the cores it
kept busy in each interval (/proc/PID/task/TID/stat; a thread's CPU after the last sample it was seen in is
not counted). BENCHMARKS.md, issue 16's thirty-ninth round, reads an import's phases off it.
"""

import os
import subprocess
import sys
import time
from typing import NamedTuple

from benchmarks.measure import command_to_sample, tree_pids

#: Threads of less CPU than this are left out of --threads' table.
SHOWN_THREAD_SECONDS = 0.05
_TICKS = os.sysconf("SC_CLK_TCK")  # of /proc's CPU times, a second


def machine_busy_seconds() -> float:
    """CPU seconds the machine's cores have been busy since it started (idle, I/O wait and stolen time left out)."""
    with open("/proc/stat") as fh:
        ticks = [int(value) for value in fh.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
    return (user + nice + system + irq + softirq) / _TICKS


def thread_cpu_seconds(root: int) -> dict[tuple[int, int], tuple[str, float]]:
    """{(pid, tid): (the thread's name, its CPU seconds so far, user and system)} of every thread of ROOT's
    process tree now."""
    found = {}
    for pid in tree_pids(root):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:  # gone
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            ticks = int(fields[11]) + int(fields[12])  # utime, stime
            found[(pid, int(tid))] = (stat[stat.index("(") + 1:stat.rindex(")")], ticks / _TICKS)
    return found


class ThreadCpu(NamedTuple):
    name: str  # as last seen
    seconds: float  # CPU seconds by the last sample it was seen in
    cores: list[float]  # cores it kept busy in each interval, from the first


class Sampled(NamedTuple):
    wall: float  # seconds
    busy: float  # CPU seconds the machine was busy
    samples: list[tuple[float, float]]  # (seconds since the start, cores busy over the interval before)
    code: int  # the command's exit code
    threads: dict[tuple[int, int], ThreadCpu]  # by (pid, tid), with by_thread


def sample(command: list[str], interval: float, by_thread: bool = False) -> Sampled:
    """COMMAND run and sampled every INTERVAL seconds; each thread's CPU too with BY_THREAD."""
    started, first = time.monotonic(), machine_busy_seconds()
    samples, last, busy = [], started, first
    threads = {}
    process = subprocess.Popen(command)
    while process.poll() is None:
        time.sleep(interval)
        now, busy_now = time.monotonic(), machine_busy_seconds()
        samples.append((now - started, (busy_now - busy) / (now - last)))
        if by_thread:
            for key, (name, seconds) in thread_cpu_seconds(process.pid).items():
                before = threads.get(key, ThreadCpu(name, 0.0, []))
                cores = before.cores + [0.0] * (len(samples) - 1 - len(before.cores))
                threads[key] = ThreadCpu(name, seconds, cores + [(seconds - before.seconds) / (now - last)])
        last, busy = now, busy_now
    return Sampled(time.monotonic() - started, machine_busy_seconds() - first, samples, process.returncode, threads)


def main(argv=None) -> int:
    args = command_to_sample(__doc__, argv, by_thread=True)
    run = sample(args.command, args.interval, args.threads)
    cores = os.cpu_count() or 1
    print(f"wall {run.wall:.2f} s, busy {run.busy:.2f} CPU s, idle {cores * run.wall - run.busy:.2f} CPU s of "
          f"{cores} cores")
    print(" ".join(f"{t:.1f}:{cores_busy:.1f}" for t, cores_busy in run.samples))
    for (pid, _), thread in sorted(run.threads.items()):
        if thread.seconds >= SHOWN_THREAD_SECONDS:
            print(f"{pid:>7} {thread.name:<15} {thread.seconds:6.2f} s  " + " ".join(f"{c:.1f}" for c in thread.cores))
    return run.code


if __name__ == "__main__":
    sys.exit(main())
