"""The MKN stage's per-bucket kernels (native/src/mkn.rs) as functions of Arrow arrays.

Each kernel reads its tables' buffers where they lie, chunk by chunk (string offsets, int32 or int64,
and bytes; 8-byte numbers) and returns its rows already ordered by the bucket of the key the next pass
joins on, with the first row of each bucket (``Laid``): Python only slices them into files. No Python
object is made per row.
"""

import ctypes
import functools
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ngramflow.transforms.kernel import _kernel

NGRAM, CONTEXT, SUFFIX = "ngram", "context", "suffix"  # the keys of an n-gram a row's bucket can be the hash of


#: glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


@functools.cache
def keep_freed_memory() -> None:
    """Let this process's C heap keep what its tasks free, for the next task to reuse.

    Each task allocates its tables and the kernel's output afresh, hundreds of MB; glibc serves blocks that
    large with mmap and returns them when freed, so every task paid a page fault per 4 KiB it touched:
    1.6M minor faults and 5 s of system time in a 7.1M-n-gram model (3.75M words, order 5, one worker).
    From the heap, kept, they were faulted in once: 0.78M faults, 2.9 s. The peak, which the memory budget
    bounds, is the same; what is freed is kept at that peak until the process ends. Where the C library
    is not glibc, there is no mallopt and nothing to do."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_MAX, 0)
    mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def bucket_of(key: str, buckets: int) -> int:
    """The bucket of KEY (an n-gram, context or suffix) among BUCKETS, as every kernel places it."""
    return _kernel.mkn_bucket_of(key.encode(), buckets)


class Laid(NamedTuple):
    """A table whose rows are ordered by bucket: bucket b's rows are starts[b]..starts[b + 1]."""

    table: pa.Table
    starts: np.ndarray

    def buckets(self):
        """(bucket, its rows as a slice of the table) of each bucket that has rows."""
        for bucket in np.flatnonzero(np.diff(self.starts)):
            start = int(self.starts[bucket])
            yield int(bucket), self.table.slice(start, int(self.starts[bucket + 1]) - start)


def _chunks(array) -> list[pa.Array]:
    return array.chunks if isinstance(array, pa.ChunkedArray) else [array]


def _strings(array) -> list[tuple]:
    """A string column as the kernels read it, where it is: (offsets, bytes, int64 offsets?) of each chunk."""
    found = []
    for chunk in _chunks(array):
        wide = chunk.type == pa.large_string()
        if not wide and chunk.type != pa.string():
            raise TypeError(f"an n-gram column of {chunk.type}")
        width = 8 if wide else 4
        offsets, data = chunk.buffers()[1:3]
        found.append((offsets.slice(width * chunk.offset, width * (len(chunk) + 1)), b"" if data is None else data,
                      wide))
    return found


def _numbers(array, type_: pa.DataType) -> list:
    """A number column (8 bytes a value) as the kernels read it: the buffer of each chunk, where it is."""
    found = []
    for chunk in _chunks(array):
        chunk = chunk.cast(type_)
        data = chunk.buffers()[1]
        found.append(b"" if data is None else data.slice(8 * chunk.offset, 8 * len(chunk)))
    return found


def _column(data: bytes, type_: pa.DataType, rows: int) -> pa.Array:
    return pa.Array.from_buffers(type_, rows, [None, pa.py_buffer(data)])


def _laid(found: tuple, schema: pa.Schema) -> Laid:
    """A kernel's (offsets, text, columns, starts) as a table of SCHEMA (a string, then 8-byte numbers)."""
    offsets, text, columns, starts = found
    rows = len(offsets) // 8 - 1
    arrays = [pa.Array.from_buffers(pa.large_string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(text)])]
    arrays += [_column(data, field.type, rows) for data, field in zip(columns, list(schema)[1:])]
    return Laid(pa.Table.from_arrays(arrays, schema=schema), np.frombuffer(starts, np.uint64))


def schema(**columns: pa.DataType) -> pa.Schema:
    """A work table's schema: the n-gram (large string), then COLUMNS."""
    return pa.schema([pa.field("ngram", pa.large_string()), *(pa.field(n, t) for n, t in columns.items())])


def lay_out(table: pa.Table, key: str, buckets: int) -> Laid:
    """TABLE's rows (an n-gram, then 8-byte numbers) ordered by the bucket of KEY of the n-gram."""
    numbers = [_numbers(table.column(i), f.type) for i, f in enumerate(table.schema) if i]
    found = _kernel.mkn_lay_out(_strings(table.column(0)), numbers, key, buckets)
    return _laid(found, schema(**{f.name: f.type for f in list(table.schema)[1:]}))


def suffixes(ngrams: pa.Array, buckets: int) -> Laid:
    """(suffix, 1) of each of distinct n-grams, laid out by the suffix's bucket."""
    return _laid(_kernel.mkn_suffixes(_strings(ngrams), buckets), schema(extensions=pa.int64()))


def adjust(raw: pa.Table, extensions: pa.Table, reserved: list[str], order: int, model_order: int,
           buckets: int) -> Laid:
    """(ngram, a, origin) from the raw counts (ngram, raw) and the extensions (ngram, extensions) of one
    bucket, and the RESERVED n-grams; laid out by the bucket of the context (order 1: of the n-gram)."""
    found = _kernel.mkn_adjust(_strings(raw.column("ngram")), _numbers(raw.column("raw"), pa.int64()),
                               _strings(extensions.column("ngram")),
                               _numbers(extensions.column("extensions"), pa.int64()),
                               [t.encode() for t in reserved], order, model_order, buckets)
    return _laid(found, schema(a=pa.int64(), origin=pa.int64()))


class ContextBucket(NamedTuple):
    overflow: str | None  # a context whose sum does not fit int64
    contexts: pa.Table  # (ngram: the context, total, n1, n2, n3plus)
    lower_log10_probs: pa.Array
    lower_log10_backoffs: pa.Array
    weighted: Laid  # (ngram, a, u, gamma) by the suffix's bucket


def contexts(successors: pa.Table, lower: pa.Table, discounts, buckets: int) -> ContextBucket:
    """One context bucket: SUCCESSORS (ngram, a) of order n, LOWER (ngram, a, p) of order n-1."""
    overflow, sums, log10_probs, log10_backoffs, weighted = _kernel.mkn_contexts(
        _strings(successors.column("ngram")), _numbers(successors.column("a"), pa.int64()),
        _strings(lower.column("ngram")), _numbers(lower.column("p"), pa.float64()),
        discounts.d1, discounts.d2, discounts.d3plus, buckets)
    rows = lower.num_rows
    return ContextBucket(
        None if overflow is None else overflow.decode(errors="replace"),
        _laid(sums, schema(total=pa.int64(), n1=pa.int64(), n2=pa.int64(), n3plus=pa.int64())).table,
        _column(log10_probs, pa.float64(), rows), _column(log10_backoffs, pa.float64(), rows),
        _laid(weighted, schema(a=pa.int64(), u=pa.float64(), gamma=pa.float64())))


def interpolate(weighted: pa.Table, lower: pa.Table, as_log10: bool, buckets: int) -> Laid:
    """(ngram, a, p) of the WEIGHTED rows whose suffix is a LOWER row, laid out by the n-gram's bucket
    (BUCKETS 0: one bucket); p as its log10 if AS_LOG10."""
    found = _kernel.mkn_interpolate(
        _strings(weighted.column("ngram")), _numbers(weighted.column("a"), pa.int64()),
        _numbers(weighted.column("u"), pa.float64()), _numbers(weighted.column("gamma"), pa.float64()),
        _strings(lower.column("ngram")), _numbers(lower.column("p"), pa.float64()), as_log10, buckets)
    return _laid(found, schema(a=pa.int64(), p=pa.float64()))


def unigrams(adjusted: pa.Table, sums: list[int], discounts, vocab_size: int, as_log10: bool, buckets: int) -> Laid:
    """(ngram, a, p) of unigrams (ngram, a) under the unigram context's SUMS (total, N1, N2, N3+), laid out
    by the n-gram's bucket (BUCKETS 0: one bucket); p as its log10 if AS_LOG10."""
    found = _kernel.mkn_unigrams(_strings(adjusted.column("ngram")), _numbers(adjusted.column("a"), pa.int64()),
                                 tuple(sums), discounts.d1, discounts.d2, discounts.d3plus, vocab_size, as_log10,
                                 buckets)
    return _laid(found, schema(a=pa.int64(), p=pa.float64()))
