"""benchmarks/memory.py: a process tree's peak memory summed by RSS (shared pages twice) and by PSS (once)."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# 64 MiB mapped shared and written, then a forked child that reads all of it and sleeps while it is sampled.
SHARED = """
import mmap, os, sys, time
shared = mmap.mmap(-1, 64 << 20)
for at in range(0, 64 << 20, 1 << 20):
    shared[at:at + (1 << 20)] = b"x" * (1 << 20)
pid = os.fork()
if pid == 0:
    sum(shared[i] for i in range(0, 64 << 20, 4096))
    time.sleep(1.0)
    os._exit(0)
os.waitpid(pid, 0)
sys.exit(5)
"""


def _peaks(out: str) -> tuple[float, float, float]:
    found = re.match(r"peak: summed RSS (\d+) MiB, summed PSS (\d+) MiB, largest process RSS (\d+) MiB", out)
    assert found, out
    return tuple(float(value) for value in found.groups())


def test_pages_two_processes_share_count_twice_in_summed_rss_and_once_in_pss():
    done = subprocess.run([sys.executable, "-m", "benchmarks.memory", "--interval", "0.05", "--", sys.executable,
                           "-c", SHARED], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 5, done.stderr  # the command's code
    rss, pss, largest = _peaks(done.stdout)
    assert rss >= 2 * 64 and largest >= 64
    assert 64 <= pss <= rss - 50  # the 64 MiB once
