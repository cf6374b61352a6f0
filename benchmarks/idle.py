"""How busy a machine's cores are while a command runs, and how much of them idles (BENCHMARKS.md, issue 16's
eighteenth round):

    python -m benchmarks.idle [--interval 0.1] -- COMMAND...

Samples the machine's CPU time (/proc/stat), so that every process counts: the command's, its children's and
the head start's (a process of its own, which the command's own CPU ticks leave out). Other jobs count too:
run it on a quiet machine. Prints the wall time, the CPU seconds the machine was busy, those its cores had idle
(cores x wall - busy), and the cores busy in each interval (1.0: one core). Exits with the command's code.
"""

import os
import subprocess
import sys
import time

from benchmarks.measure import command_to_sample


def machine_busy_seconds() -> float:
    """CPU seconds the machine's cores have been busy since it started (idle, I/O wait and stolen time left out)."""
    with open("/proc/stat") as fh:
        ticks = [int(value) for value in fh.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def sample(command: list[str], interval: float) -> tuple[float, float, list[tuple[float, float]], int]:
    """(wall seconds, busy CPU seconds, [(seconds since the start, cores busy over the interval before)], return
    code) of COMMAND."""
    started, first = time.monotonic(), machine_busy_seconds()
    samples, last, busy = [], started, first
    process = subprocess.Popen(command)
    while process.poll() is None:
        time.sleep(interval)
        now, busy_now = time.monotonic(), machine_busy_seconds()
        samples.append((now - started, (busy_now - busy) / (now - last)))
        last, busy = now, busy_now
    return time.monotonic() - started, machine_busy_seconds() - first, samples, process.returncode


def main(argv=None) -> int:
    command, interval = command_to_sample(__doc__, argv)
    wall, busy, samples, code = sample(command, interval)
    cores = os.cpu_count() or 1
    print(f"wall {wall:.2f} s, busy {busy:.2f} CPU s, idle {cores * wall - busy:.2f} CPU s of {cores} cores")
    print(" ".join(f"{t:.1f}:{cores_busy:.1f}" for t, cores_busy in samples))
    return code


if __name__ == "__main__":
    sys.exit(main())
