"""Vectorized building blocks over Arrow/NumPy columns, shared by the stages.

Year sets travel as bit masks (bit ``year - YEAR_MIN``): merging partial counts
of one n-gram is then a bitwise OR, and the number of distinct years, the first
and the last year stay exact however the rows were split. A mask is stored as its
span (native/src/masks.rs): a byte, the index of its first byte with a bit, then
its bytes up to its last with one.

Arrow's compute functions and NumPy's random generators are imported where they are used (here and in
transforms/collapse.py): the head start's process (transforms/head_start.py), forked before Beam loads, reads
with neither, and their imports were 60-120 ms of the command's start, on one core before the fork.
"""

import functools

import numpy as np
import pyarrow as pa

from ngramflow.schemas import YEAR_MAX, YEAR_MIN, YEAR_SERIES
from ngramflow.transforms import checked, native

MASK_BYTES = (YEAR_MAX - YEAR_MIN) // 8 + 1  # of a whole mask
MASK_TYPE = pa.binary()  # of its span


def whole(column) -> pa.Array:
    """A column (an array, or a chunked array such as a table's) as one array: a chunked array's only chunk
    as it is, since ChunkedArray.combine_chunks copies even one chunk (1M n-grams: 11 ms); several
    concatenated."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def leading(column, rows: int) -> pa.Array:
    """A column's first ROWS rows at least, as one array to take rows from: a chunked array's first chunk where
    it holds them (a range's merge gives its tables of one order each in ascending order, and a table's unigram
    rows are in the first, of 1-grams), else the column whole (a take from a chunked array looks up each row's
    chunk; joined, the counts of every n-gram of a range were copied for its unigrams' few)."""
    if isinstance(column, pa.ChunkedArray) and column.num_chunks and rows <= len(column.chunk(0)):
        return column.chunk(0)
    return whole(column)


def numpy(column) -> np.ndarray:
    return whole(column).to_numpy(zero_copy_only=False)


def run_starts(keys) -> np.ndarray:
    """Indices where a new run of equal consecutive keys begins."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, np.int64)
    import pyarrow.compute as pc  # see the module's docstring

    changed = numpy(pc.not_equal(keys.slice(1), keys.slice(0, n - 1)))
    return np.flatnonzero(np.concatenate(([True], changed)))


def run_stops(starts: np.ndarray, n: int) -> np.ndarray:
    """For runs that begin at ``starts`` among n rows, where each ends (exclusive): where the next begins."""
    return np.append(starts[1:], n)


def run_ids(starts: np.ndarray, n: int) -> np.ndarray:
    """For each of n rows, the index of the run it belongs to."""
    marks = np.zeros(n, np.int64)
    marks[starts[1:]] = 1
    return np.cumsum(marks)


def sum_by_ngram(values: np.ndarray, starts: np.ndarray, ngrams, column: str) -> np.ndarray:
    """The sum of each run of consecutive ``values`` (runs begin at ``starts``; ``ngrams[i]`` is run i's
    n-gram).

    A sum that does not fit int64 raises checked.CountOverflow naming the n-gram and ``column``.
    """
    return checked.sum_runs(values, starts, lambda run: f"{column} of n-gram {ngrams[run].as_py()!r}")


def year_masks(years: np.ndarray, ids: np.ndarray, runs: int) -> np.ndarray:
    """(runs, MASK_BYTES) uint8 masks with the bit of every (run, year) pair set."""
    bit = years.astype(np.int64) - YEAR_MIN
    masks = np.zeros((runs, MASK_BYTES), np.uint8)
    np.bitwise_or.at(masks, (ids, bit >> 3), (1 << (bit & 7)).astype(np.uint8))
    return masks


def mask_array(masks: np.ndarray) -> pa.Array:
    """The spans of (n, MASK_BYTES) uint8 whole masks, as a column (an empty mask: the byte 0 alone)."""
    nonzero = masks != 0
    some = nonzero.any(axis=1)
    lo = np.where(some, nonzero.argmax(axis=1), 0)
    hi = np.where(some, MASK_BYTES - 1 - nonzero[:, ::-1].argmax(axis=1), -1)
    # Each row's span: its first-byte index in front of its bytes, the kept ones picked row by row.
    spans = np.concatenate([lo[:, None].astype(np.uint8), masks], axis=1)
    column = np.arange(MASK_BYTES)
    kept = np.concatenate([np.ones((len(masks), 1), bool),
                           (column >= lo[:, None]) & (column <= hi[:, None])], axis=1)
    offsets = np.concatenate(([0], np.cumsum(kept.sum(axis=1)))).astype(np.int32)
    return pa.Array.from_buffers(MASK_TYPE, len(masks), [None, pa.py_buffer(offsets), pa.py_buffer(spans[kept])])


def mask_stats(column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first year, last year, number of years) of each (non-empty) mask."""
    return native.mask_stats(whole(column))


def series_by_run(ids: np.ndarray, years, matches, volumes, runs: int) -> pa.Array:
    """Per run, its (year, match, volume) list: summed per year, years ascending."""
    grouped = pa.table({"run": ids, "year": years, "match": matches, "volume": volumes}) \
        .group_by(["run", "year"]).aggregate([("match", "sum"), ("volume", "sum")]) \
        .sort_by([("run", "ascending"), ("year", "ascending")])
    offsets = np.searchsorted(numpy(grouped["run"]), np.arange(runs + 1)).astype(np.int32)
    values = pa.StructArray.from_arrays(
        [grouped["year"].combine_chunks().cast(pa.int16()), grouped["match_sum"].combine_chunks(),
         grouped["volume_sum"].combine_chunks()],
        fields=list(YEAR_SERIES.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), values, type=YEAR_SERIES)


def explode_series(keys, series) -> tuple[np.ndarray, pa.Array, pa.Array, pa.Array]:
    """(key index, year, match, volume) of every element of a series column."""
    import pyarrow.compute as pc  # see the module's docstring

    series = whole(series)
    flat = pc.list_flatten(series)
    return (numpy(pc.list_parent_indices(series)), flat.field("year"), flat.field("match_count"),
            flat.field("volume_count"))


def _string_buffers(strings) -> tuple[np.ndarray, np.ndarray]:
    """(offsets as int64, data bytes) of a string array, honouring its slice offset."""
    strings = whole(strings)
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset:strings.offset + n + 1].astype(np.int64)
    data = np.frombuffer(strings.buffers()[2] or b"", np.uint8)
    return offsets, data


@functools.cache
def _weights() -> np.ndarray:
    """A fixed random weight per byte position, which makes the shard of a key the same in every process and on
    every machine (Python's hash() is salted per process)."""
    from numpy.random import default_rng  # see the module's docstring

    return default_rng(20121701).integers(1, 2**63, size=64, dtype=np.uint64) | np.uint64(1)


def shard_of(keys, shards: int, salt: int = 0) -> np.ndarray:
    """A stable shard number in [0, shards) for each string key (keys must be non-empty); another ``salt``
    gives numbers independent of these (a sample of the keys of one shard)."""
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    offsets, data = _string_buffers(keys)
    data = data[offsets[0]:offsets[-1]].astype(np.uint64)
    starts = offsets[:-1] - offsets[0]
    lengths = np.diff(offsets)
    position = np.arange(len(data)) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):
        h = np.add.reduceat(data * _weights()[position & 63], starts) ^ np.uint64(salt)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return (h % np.uint64(shards)).astype(np.int64)
