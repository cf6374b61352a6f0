"""A command's peak memory, its whole process tree's, three ways (BENCHMARKS.md, issue 16's thirty-third round):

    python -m benchmarks.memory [--interval 0.1] -- COMMAND...

- the processes' RSS summed, as measure.run reports it: a page two processes map counts twice (a forked
  process's pages shared with its parent until either writes them, buffers mapped by both);
- their PSS summed: each page once, shared pages split between the processes that map them;
- the largest process's RSS (what /usr/bin/time and the runner's own accounting report).

Reads /proc/PID/smaps_rollup, which walks each process's page tables: heavier than measure.run's sampling, so
not for timed runs. Prints one line; exits with the command's code.
"""

import subprocess
import sys
import time

from benchmarks.measure import command_to_sample, tree_pids


def _rollup(pid: int) -> dict[str, int]:
    """A process's Rss and Pss, in bytes (0 for one gone)."""
    found = {"Rss": 0, "Pss": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in found:
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


def tree_memory(root: int) -> tuple[int, int, int]:
    """(summed RSS, summed PSS, the largest RSS) of ROOT and its descendants now, in bytes."""
    rollups = [_rollup(pid) for pid in tree_pids(root)]
    return (sum(r["Rss"] for r in rollups), sum(r["Pss"] for r in rollups), max(r["Rss"] for r in rollups))


def main(argv=None) -> int:
    args = command_to_sample(__doc__, argv)
    proc = subprocess.Popen(args.command, stdout=subprocess.DEVNULL)
    peak = (0, 0, 0)
    while proc.poll() is None:
        peak = tuple(map(max, peak, tree_memory(proc.pid)))
        time.sleep(args.interval)
    rss, pss, largest = (value / 2**20 for value in peak)
    print(f"peak: summed RSS {rss:.0f} MiB, summed PSS {pss:.0f} MiB, largest process RSS {largest:.0f} MiB")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
