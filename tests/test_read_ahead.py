"""A local input file's pages are asked of the kernel ahead of its reader (lines._ReadAheadFile), so that a file
on a cold disk is fetched while the text before is decompressed; what the reader reads is unchanged.

Which pages the page cache holds is asked of the kernel itself (mincore on a mapping of the file), after the
file's pages were dropped (posix_fadvise DONTNEED): a folder whose files the kernel cannot drop (tmpfs) skips.
"""

import ctypes
import errno
import gzip
import mmap
import os
import random
import time

import pytest

from benchmarks import measure
from ngramflow.transforms import lines as reading

MIB = 1 << 20
AHEAD = 4 * MIB


def resident(path: str, offset: int) -> bool:
    """Whether the page cache holds the page of PATH at OFFSET."""
    libc = ctypes.CDLL(None, use_errno=True)
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) as mapped:
        start = ctypes.c_char.from_buffer(mapped)
        try:
            page = offset - offset % mmap.PAGESIZE
            vector = (ctypes.c_ubyte * 1)()
            if libc.mincore(ctypes.c_void_p(ctypes.addressof(start) + page), mmap.PAGESIZE, vector):
                raise OSError(ctypes.get_errno(), "mincore")
            return bool(vector[0] & 1)
        finally:
            del start  # the mapping cannot close while a view of it is exported


def dropped(path: str) -> str:
    """PATH with its pages out of the page cache (as `benchmarks.alternate --cold` drops a corpus's), or the test
    skipped where the kernel keeps them."""
    measure.dropped([path])
    if any(resident(path, at) for at in range(0, os.path.getsize(path), MIB)):
        pytest.skip("the kernel keeps this folder's files in memory (tmpfs)")
    return path


def fetched(path: str, offsets) -> bool:
    """Whether the page cache comes to hold the pages of PATH at OFFSETS within seconds: the kernel reads the
    pages it is asked for in the background, and holds them once they are read."""
    deadline = time.monotonic() + 10
    while not all(resident(path, at) for at in offsets):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def incompressible(tmp_path) -> tuple[str, bytes]:
    """(a gzip file of 8 MiB of random bytes, its text): its compressed bytes about as many as its text's."""
    text = random.Random(7).randbytes(8 * MIB)
    path = tmp_path / "random.gz"
    with gzip.open(path, "wb", compresslevel=1) as fh:
        fh.write(text)
    return str(path), text


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise (macOS): files are read plainly")
def test_a_local_file_is_fetched_ahead_of_its_reader(incompressible, monkeypatch):
    monkeypatch.setattr(reading, "READ_AHEAD_BYTES", AHEAD)
    path, _ = incompressible
    with open(dropped(path), "rb", buffering=0) as plain:  # the kernel's own readahead, for a first small read
        plain.readinto(bytearray(mmap.PAGESIZE))
    time.sleep(0.2)
    if resident(path, AHEAD - MIB):
        pytest.skip("this kernel's own readahead fetches as far for a first read of a page")
    with reading._ReadAheadFile(dropped(path)) as ahead:
        ahead.readinto(bytearray(mmap.PAGESIZE))
        assert fetched(path, range(0, AHEAD, reading.ADVICE_BYTES))
        assert not resident(path, 8 * MIB - mmap.PAGESIZE)  # as far ahead as asked, no further
        ahead.seek(6 * MIB)  # a later slice's reader: asks from where it starts
        ahead.readinto(bytearray(mmap.PAGESIZE))
        assert fetched(path, [8 * MIB - mmap.PAGESIZE])


def test_a_file_read_ahead_decompresses_to_its_text_whole_and_from_a_later_offset(incompressible):
    path, text = incompressible
    data, raw = reading._open(path)
    with raw:
        assert isinstance(raw, reading._ReadAheadFile) == hasattr(os, "posix_fadvise")
        got, buffer = bytearray(), bytearray(3 * MIB + 1)  # reads that end across the advice's pieces
        while n := data.readinto(buffer):
            got += buffer[:n]
    assert got == text
    with reading._ReadAheadFile(path) as raw, open(path, "rb") as plain:
        raw.seek(5 * MIB)
        assert raw.read() == plain.read()[5 * MIB:]


def test_a_file_system_that_takes_no_advice_is_read_without(incompressible, monkeypatch):
    def refused(*_):
        raise OSError(errno.EINVAL, "no advice taken here")

    monkeypatch.setattr(os, "posix_fadvise", refused, raising=False)
    path, text = incompressible
    with reading._ReadAheadFile(path) as raw:
        data = reading.isal_zlib._GzipReader(raw, reading.ADVICE_BYTES)
        assert data.read() == text


def test_a_benchmark_reads_the_files_it_measures_into_the_page_cache_first(incompressible):
    """benchmarks.alternate's commands read warm files, unless --cold: measure.warmed brings every page of a
    dropped file back, so that no command of a round, isal least of all, is charged for reading the disk."""
    path, _ = incompressible
    dropped(path)
    measure.warmed([path])
    assert all(resident(path, at) for at in range(0, os.path.getsize(path), mmap.PAGESIZE))
