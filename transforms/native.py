"""The native kernel (native/, Rust, built by `pip install` as ngramflow.transforms._kernel), and the
Arrow and NumPy faces of its column functions; the per-chunk parse is transforms/kernel.py's.

`pip install` builds the kernel twice: for any CPU of its architecture (`_kernel`) and for x86-64-v3
(`_kernel_v3`: AVX2, BMI2, ...), which this module loads where the CPU runs it, as `_kernel`. The same
results, byte for byte (tests/test_kernel_builds.py); the second up to 3% less CPU an import (BENCHMARKS.md,
thirty-sixth round). A machine's wheel or image may run on another machine: the choice is made where it runs.
"""

import os

import numpy as np
import pyarrow as pa

from ngramflow.errors import KernelMissing, UserError
from ngramflow.schemas import YEAR_MAX, YEAR_MIN

#: The environment variable that chooses the kernel's build: PORTABLE_BUILD for the build for any CPU, where
#: the one for x86-64-v3 would be taken (tests compare the two; a user may rule a build out).
KERNEL_BUILD_VARIABLE = "NGRAMFLOW_KERNEL_BUILD"
PORTABLE_BUILD = "portable"

try:
    from ngramflow.transforms import _kernel
except ImportError as err:  # no silent fallback to a slower path: the command line shows this one line
    raise KernelMissing(f"ngramflow's native parse kernel (ngramflow.transforms._kernel, built from native/ with "
                        f"cargo) is not built or does not load ({err}); run `make setup`, which builds it "
                        "(needs cargo)") from None

_build = os.environ.get(KERNEL_BUILD_VARIABLE, "")
if _build not in ("", PORTABLE_BUILD):
    raise UserError(f"{KERNEL_BUILD_VARIABLE}={_build!r}: only {PORTABLE_BUILD!r} (the kernel built for any CPU) "
                    "may be asked for; unset, the fastest build this CPU runs is taken")
if not _build and _kernel.runs_x86_64_v3():
    try:
        from ngramflow.transforms import _kernel_v3 as _kernel
    except ImportError as err:
        raise KernelMissing(f"ngramflow's native kernel for x86-64-v3 (ngramflow.transforms._kernel_v3) is not built "
                            f"or does not load ({err}); run `make setup`, which builds it (needs cargo)") from None

assert _kernel.MASK_BYTES == (YEAR_MAX - YEAR_MIN) // 8 + 1, "native/ and schemas disagree on the year range"

_NO_BYTES = pa.py_buffer(b"")


def _string_buffers(strings: pa.Array) -> tuple[pa.Buffer, pa.Buffer]:
    """(offsets, bytes) of a non-empty string or binary array, its offsets those of its own rows (it may be
    a slice)."""
    _, offsets, data = strings.buffers()
    return offsets.slice(4 * strings.offset, 4 * (len(strings) + 1)), data or _NO_BYTES


def _pieces(strings: pa.Array | pa.ChunkedArray) -> list[tuple[pa.Buffer, pa.Buffer]]:
    """The (offsets, bytes) of each non-empty chunk of a string or binary array (an array: its one chunk)."""
    chunks = strings.chunks if isinstance(strings, pa.ChunkedArray) else [strings]
    return [_string_buffers(chunk) for chunk in chunks if len(chunk)]


def count_lines(text: bytes) -> int:
    """The lines of a piece of whole lines, the last perhaps without its newline."""
    return _kernel.count_lines(text)


def merge_order(keys: pa.Array) -> tuple[np.ndarray | None, np.ndarray]:
    """(the rows of a string array in key order, or None when they already are; the position in that
    order of the first row of each group of equal keys): native/src/order.rs, a stable sort that merges
    the array's sorted pieces."""
    if len(keys) == 0:
        return None, np.zeros(0, np.int64)
    order, starts = _kernel.merge_order(*_string_buffers(keys))
    return _rows(order), np.frombuffer(starts, np.int64)


def rows_in_order(keys: pa.Array) -> np.ndarray | None:
    """merge_order's first alone (the rows in key order, None when they already are), for keys whose groups
    are not asked for."""
    return None if len(keys) == 0 else _rows(_kernel.rows_in_order(*_string_buffers(keys)))


def _rows(order) -> np.ndarray | None:
    """An order the kernel gives (its rows, int64, or None: in order already) as NumPy's."""
    return None if order is None else np.frombuffer(order, np.int64)


def strictly_ascending(keys: pa.Array) -> bool:
    """Whether a string array's keys ascend strictly (UTF-8 byte order): sorted, each key once."""
    order, starts = merge_order(keys)
    return order is None and len(starts) == len(keys)


def _int64s(values: np.ndarray | None) -> np.ndarray | None:
    return None if values is None else np.ascontiguousarray(values, np.int64)


def sum_groups(values: np.ndarray, order: np.ndarray | None, starts: np.ndarray) -> tuple[np.ndarray, int]:
    """(each group's sum; the first group whose sum does not fit int64, -1: none) of int64 VALUES grouped as
    merge_order's (ORDER, STARTS) give them: native/src/order.rs."""
    sums, failed = _kernel.sum_groups(_int64s(values), _int64s(order), _int64s(starts))
    return np.frombuffer(sums, np.int64), failed


def merge_tokens(tokens: pa.Array, matches: np.ndarray, volumes: np.ndarray, order: np.ndarray | None,
                 starts: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """(each group's token; the match and volume counts of its row of largest match count, the first on ties,
    int64, -1: none) of the rows of a string array of TOKENS with int64 MATCHES and VOLUMES (-1: none), grouped
    as merge_order's (ORDER, STARTS) give them: native/src/order.rs, one pass."""
    offsets, data, matches, volumes = _kernel.merge_tokens(*_string_buffers(tokens), _int64s(matches),
                                                           _int64s(volumes), _int64s(order), _int64s(starts))
    return (pa.Array.from_buffers(tokens.type, len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)]),
            np.frombuffer(matches, np.int64), np.frombuffer(volumes, np.int64))


def rank_in_order(tokens: pa.ChunkedArray, counts: np.ndarray,
                  volumes: np.ndarray) -> tuple[np.ndarray, pa.BinaryArray]:
    """Tokens in token order (a chunked string array, its chunks ascending one after another) with their counts
    and volume counts (int64, -1: none) -> (their volume counts, and their rank keys as rank_keys makes them,
    which hold their counts, in the vocabulary's id order): native/src/order.rs, a stable radix sort of the
    counts that writes each key where the order puts it and takes each volume count as it goes."""
    taken, offsets, data = _kernel.rank_in_order(_pieces(tokens), _int64s(counts), _int64s(volumes))
    return np.frombuffer(taken, np.int64), pa.Array.from_buffers(
        pa.binary(), len(counts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def take_keys(keys: pa.Array, order: np.ndarray | None, skip: int, kind: pa.DataType) -> pa.Array:
    """The rows of a string or binary array in ORDER (None: as they are), each without its first SKIP bytes, as
    an array of KIND: native/src/order.rs."""
    return _taken(keys, order, skip, kind, counts=False)[0]


def tokens_of_ranks(ranks: pa.Array, order: np.ndarray | None) -> tuple[pa.Array, np.ndarray]:
    """The tokens of rank keys (rank_keys') in ORDER (None: as they are), and each one's count read back from
    its key (int64, -1: none): native/src/order.rs."""
    return _taken(ranks, order, RANK_HEAD, pa.string(), counts=True)


def _taken(keys: pa.Array, order: np.ndarray | None, skip: int, kind: pa.DataType, counts: bool):
    if len(keys) == 0:
        return pa.array([], kind), np.zeros(0, np.int64) if counts else None
    offsets, data, heads = _kernel.take_keys(*_string_buffers(keys), _int64s(order), skip, counts)
    taken = pa.Array.from_buffers(kind, len(offsets) // 4 - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return taken, None if heads is None else np.frombuffer(heads, np.int64)


def rows_below(keys: pa.Array, key: str | bytes, through: bool = False) -> int:
    """The rows of a sorted string or binary array whose keys are below KEY (or up to and with it, THROUGH), in
    UTF-8 byte order, which is Python's order of str: native/src/order.rs, a binary search."""
    if len(keys) == 0:
        return 0
    return _kernel.rows_below(*_string_buffers(keys), key.encode() if isinstance(key, str) else key, through)


#: The bytes of a rank_keys key before its token's.
RANK_HEAD = _kernel.RANK_HEAD


def rank_keys(tokens: pa.Array, counts: np.ndarray) -> pa.BinaryArray:
    """Each token of a string array with its count (int64, -1: none) -> its key of the vocabulary's id order
    (transforms/vocabulary.py, with_rank): native/src/order.rs."""
    if len(tokens) == 0:
        return pa.array([], pa.binary())
    offsets, data = _kernel.rank_keys(*_string_buffers(tokens), _int64s(counts))
    return pa.Array.from_buffers(pa.binary(), len(tokens), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def first_rows(order: np.ndarray | None, starts: np.ndarray) -> np.ndarray:
    """The row of the first of each group of merge_order's (ORDER, STARTS)."""
    return starts if order is None else order[starts]


#: RecentTokens(bytes): the tokens a worker gave its token runs lately, a cache of about BYTES that
#: distinct_tokens leaves out and adds to (native/src/recent.rs).
RecentTokens = _kernel.RecentTokens


def distinct_tokens(ngrams: pa.Array | pa.ChunkedArray,
                    recent: RecentTokens | None = None) -> tuple[pa.Array, np.ndarray]:
    """(the distinct tokens of a string array of n-grams, or of a chunked one's chunks in turn, sorted; each
    one's first unigram row among the n-grams, int64, -1 where it has none): native/src/order.rs, the chunks
    as they are (joined, a range's tables of one order each were copied whole once more). With RECENT, the
    tokens of n-grams of two tokens or more that it holds are left out, and those it lacks it holds from then
    on; a unigram is always given, with its row."""
    if len(ngrams) == 0:
        return pa.array([], pa.string()), np.zeros(0, np.int64)
    offsets, tokens, rows = _kernel.distinct_tokens(_pieces(ngrams), recent)
    return (pa.Array.from_buffers(pa.string(), len(offsets) // 4 - 1,
                                  [None, pa.py_buffer(offsets), pa.py_buffer(tokens)]),
            np.frombuffer(rows, np.int64))


def orders(ngrams: pa.Array) -> np.ndarray:
    """The order of each n-gram of a string array, int8: schemas.order_of's count, natively."""
    if len(ngrams) == 0:
        return np.zeros(0, np.int8)
    return np.frombuffer(_kernel.orders(*_string_buffers(ngrams)), np.int8)


def prefix_stretches(keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(the first row of each stretch of consecutive keys of a string array that share their first character
    and the byte after it, int64; that prefix as a big-endian number, zero-padded, uint64: prefixes compare
    as their bytes do): native/src/order.rs."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    starts, prefixes = _kernel.prefix_stretches(*_string_buffers(keys))
    return np.frombuffer(starts, np.int64), np.frombuffer(prefixes, np.uint64)


def mask_stats(masks: pa.BinaryArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first year, last year, number of years), int16, of each year-set span mask: native/src/masks.rs."""
    if len(masks) == 0:
        return tuple(np.zeros(0, np.int16) for _ in range(3))
    found = _kernel.mask_stats(*_string_buffers(masks))
    return tuple(np.frombuffer(column, np.int16) for column in found)


def _grouped(keys: pa.Array, matches: np.ndarray, volumes: np.ndarray, masks, order: np.ndarray | None,
             starts: np.ndarray) -> tuple:
    """The columns of the kernel's merges of groups (merge_groups, merge_ngrams), as it takes them: one tuple."""
    return (*_string_buffers(keys), _int64s(matches), _int64s(volumes), _pieces(masks), _int64s(order),
            _int64s(starts))


_SUMMED = ("match", "volume")  # the kernel's columns of a sum past int64, by number


def merge_groups(keys: pa.Array, matches: np.ndarray, volumes: np.ndarray, masks, order: np.ndarray | None,
                 starts: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray, pa.Array] | tuple[int, str]:
    """(each group's key, sums of MATCHES and VOLUMES, and OR of its year-set span masks (an array or chunked
    array): the merged rows of merge_order's (ORDER, STARTS) over string KEYS), or (the first group whose
    sum does not fit int64, "match" or "volume"): native/src/groups.rs, one pass over the groups."""
    found = _kernel.merge_groups(_grouped(keys, matches, volumes, masks, order, starts))
    if len(found) == 2:
        group, column = found
        return group, _SUMMED[column]
    key_offsets, key_bytes, sums_m, sums_v, mask_offsets, mask_bytes = found
    groups = len(starts)
    return (pa.Array.from_buffers(keys.type, groups, [None, pa.py_buffer(key_offsets), pa.py_buffer(key_bytes)]),
            np.frombuffer(sums_m, np.int64), np.frombuffer(sums_v, np.int64),
            pa.Array.from_buffers(masks.type, groups, [None, pa.py_buffer(mask_offsets), pa.py_buffer(mask_bytes)]))


def merge_ngrams(keys: pa.Array, matches: np.ndarray, volumes: np.ndarray, masks, order: np.ndarray | None,
                 starts: np.ndarray, min_count: int) -> list[tuple] | tuple[int, str]:
    """merge_groups' rows of at least MIN_COUNT matches as n-gram rows, each order's apart: [(order, n-grams,
    matches, volumes, first years, last years, years)] of each order present, ascending, each order's rows in
    the groups' order (int64 sums, int16 years as mask_stats counts them), or (the first group whose sum does
    not fit int64, "match" or "volume"): native/src/groups.rs, one pass over the groups."""
    found = _kernel.merge_ngrams(_grouped(keys, matches, volumes, masks, order, starts), min_count)
    if isinstance(found, tuple):
        group, column = found
        return group, _SUMMED[column]
    return [(order, pa.Array.from_buffers(keys.type, len(sums_m) // 8,
                                          [None, pa.py_buffer(key_offsets), pa.py_buffer(key_bytes)]),
             *(np.frombuffer(column, np.int64) for column in (sums_m, sums_v)),
             *(np.frombuffer(column, np.int16) for column in (first, last, years)))
            for order, key_offsets, key_bytes, sums_m, sums_v, first, last, years in found]


#: The kernel's names of the column types its Parquet writer takes (native/src/parquet.rs).
_PARQUET_KINDS = {pa.string(): "utf8", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32",
                  pa.int64(): "int64"}


def parquet_writable(schema: pa.Schema) -> bool:
    """Whether ParquetFile writes files of SCHEMA: flat columns of its types, nulls in integer columns only."""
    return all(field.type in _PARQUET_KINDS and not (field.nullable and field.type == pa.string())
               for field in schema)


def _array_buffers(array: pa.Array, field: pa.Field) -> list[pa.Buffer]:
    """The buffers of a non-empty ARRAY of FIELD that the kernel's ParquetFile.row_group takes: a string
    array's offsets and bytes, an integer array's values, and a nullable field's definition bytes (a byte a
    row, 0 for a null; none: no null)."""
    if field.type == pa.string():
        return list(_string_buffers(array))
    width = array.type.bit_width // 8
    buffers = [array.buffers()[1].slice(array.offset * width, len(array) * width)]
    if field.nullable:
        buffers.append(pa.py_buffer(array.is_valid().to_numpy(zero_copy_only=False).view(np.uint8))
                       if array.null_count else _NO_BYTES)
    return buffers


class ParquetFile:
    """A Parquet file of SCHEMA (parquet_writable) written by the kernel (native/src/parquet.rs): strings
    DELTA_BYTE_ARRAY, integers DELTA_BINARY_PACKED (a nullable field's column optional), the pages of the
    columns in ZSTD compressed with zstd, min/max statistics; the footer holds KEY_VALUE metadata. ``header``,
    ``row_group`` of each table of rows, then ``footer`` give the bytes to write in turn."""

    def __init__(self, schema: pa.Schema, zstd: set[str], key_value: dict[str, str], created_by: str):
        self.schema = schema
        self.file = _kernel.ParquetFile(schema.names, [_PARQUET_KINDS[field.type] for field in schema],
                                        [name in zstd for name in schema.names],
                                        [field.nullable for field in schema], list(key_value.items()), created_by)

    def header(self) -> bytes:
        return self.file.header()

    def row_group(self, table: pa.Table):
        """The bytes of a row group of TABLE's rows (of the file's schema, nulls only where it allows them, at
        least one row). Each column's chunks are handed over as they are: the kernel joins those of a column
        of several (a row group of a table put together from pieces) in buffers of its own."""
        buffers, chunks = [], []
        for field, column in zip(self.schema, table.columns):
            arrays = [a for a in column.chunks if len(a)]
            if column.null_count and not field.nullable:
                raise ValueError(f"{field.name}: nulls in a field that holds none")
            chunks.append(len(arrays))
            for array in arrays:
                buffers += _array_buffers(array, field)
        return self.file.row_group(buffers, chunks)

    def footer(self) -> bytes:
        return self.file.footer()
