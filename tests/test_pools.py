"""transforms/pools.py: a pool's threads carry their Python names at the OS, where profiles by thread read them."""

import sys
import threading

import pytest

from ngramflow.transforms import pools


def os_name() -> str:
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as fh:
        return fh.read().rstrip("\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names at the OS are Linux's (prctl)")
def test_a_pools_threads_are_named_for_the_os_as_for_python_cut_to_what_linux_keeps():
    with pools.named_pool(2, "merge") as pool:
        names = {pool.submit(lambda: (threading.current_thread().name, os_name())).result() for _ in range(4)}
    assert names <= {("merge_0", "merge_0"), ("merge_1", "merge_1")} and names, names
    with pools.named_pool(1, "a-prefix-longer-than-linux-keeps") as pool:
        python, at_the_os = pool.submit(lambda: (threading.current_thread().name, os_name())).result()
    assert python == "a-prefix-longer-than-linux-keeps_0"
    assert at_the_os == python.encode()[:pools.OS_NAME_BYTES].decode() == "a-prefix-longer"
