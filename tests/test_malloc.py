"""The import's glibc settings (sizing.share_one_malloc_arena): memory a thread frees is used again, not mapped
afresh, page by page, for each large allocation."""

import subprocess
import sys

import pytest

from ngramflow.transforms.sizing import glibc

CHURN = """
import ctypes, resource, sys, threading
from ngramflow.transforms.sizing import share_one_malloc_arena
if sys.argv[1] == "shared":
    share_one_malloc_arena()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
SIZE, TIMES = 48 << 20, 20

def churn():
    for _ in range(TIMES):
        block = libc.malloc(SIZE)
        libc.memset(block, 1, SIZE)  # every page written, as a kernel's column is
        libc.free(block)

before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
worker = threading.Thread(target=churn)  # a thread of its own, as the import's workers
worker.start()
worker.join()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) * resource.getpagesize() / (SIZE * TIMES))
"""


def _pages_faulted(setting: str) -> float:
    """The share of the pages of 20 allocations of 48 MiB, each written and freed by a thread, that faulted."""
    done = subprocess.run([sys.executable, "-c", CHURN, setting], capture_output=True, text=True, check=True)
    return float(done.stdout)


@pytest.mark.skipif(glibc("mallopt") is None, reason="the C library is not glibc: its malloc has no such settings")
def test_a_thread_uses_again_the_memory_it_freed():
    # glibc's default: each allocation's pages are mapped anew and fault as they are written.
    assert _pages_faulted("default") > 0.9
    # Shared: the first allocation's pages fault, the next ones reuse them.
    assert _pages_faulted("shared") < 0.1
