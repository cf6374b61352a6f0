"""Thread pools whose threads the operating system knows by their names.

Python (3.11) keeps a thread's name to itself: `top -H`, `perf --comms` and /proc/PID/task/TID/comm show
every thread of an import as "python". A pool made here gives each of its threads Python's name for it
(PREFIX_N) at the OS too, cut to the 15 bytes Linux keeps, so that a profile by thread
(`python -m benchmarks.idle --threads`) tells the read-ahead, spill, merge, Parquet and vocabulary threads
apart (BENCHMARKS.md, issue 16's thirty-ninth round); the head start's process is "head-start".
"""

import concurrent.futures
import threading

from ngramflow.transforms.sizing import glibc

_PR_SET_NAME = 15  # prctl's option (linux/prctl.h)
#: The bytes of a name Linux keeps, its terminating zero left out.
OS_NAME_BYTES = 15


def name_for_the_os(name: str | None = None) -> None:
    """Give the calling thread NAME at the OS (by default its Python name; where the C library has prctl, else
    nothing). prctl's result is not looked at: a name is for profiles, and the work goes on without one."""
    prctl = glibc("prctl")
    if prctl is not None:
        prctl(_PR_SET_NAME, (name or threading.current_thread().name).encode()[:OS_NAME_BYTES], 0, 0, 0)


def named_pool(workers: int, prefix: str) -> concurrent.futures.ThreadPoolExecutor:
    """A ThreadPoolExecutor of up to WORKERS threads named PREFIX_0, PREFIX_1, ... for Python and the OS."""
    return concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix=prefix, initializer=name_for_the_os)
