"""How big each piece of work is: every sizing knob of a run, with the measurement or reason that set it.

Measurements are in BENCHMARKS.md (2-core machine, 24 GiB); a knob without one
says what it trades.
"""

import ctypes
import functools
import os
import shutil

# The read stage.

#: Decompressed bytes parsed at once: large enough for Arrow's CSV reader to run at full speed,
#: small enough to keep a worker's memory flat. Measured: reading a 27 MB and a 108 MB gzip file
#: peaks at 313 and 333 MiB (BENCHMARKS.md, "Per-file read stage alone").
CHUNK_BYTES = 8 << 20

#: Compressed bytes of a local input file that the kernel is asked to fetch ahead of its reader
#: (lines._ReadAheadFile): a tenth of a second of decompression, a few of the disk's reads.
READ_AHEAD_BYTES = 32 << 20

#: Run rows a worker buffers from consecutive small files before emitting one table, so that small
#: files do not each cost an element downstream.
EMIT_RUNS = 1 << 18


#: Compressed input from which the embedded runner runs a worker thread per core by default. A second
#: thread costs little (the bundled sample, 62K rows: 1.8 s with one, 2.1-2.4 s with two) and is won
#: back from a few files on (the 2012 format, one file of 13.9 MB: 2.67 s and 2.75 s; three files, 41 MB:
#: 4.29 s and 4.13 s; BENCHMARKS.md "Workers"). One file is read by one worker either way.
PARALLEL_INPUT_BYTES = 32 << 20


#: Compressed input the head start reads at most (transforms/head_start.py): more than one core reads in the
#: second the embedded runner's start leaves it idle (a file the stage asks for that does not fit what is left
#: of it is cut short), and a bound on the run tables its folder holds (in the temporary folder, until the stage
#: takes them).
HEAD_START_BYTES = 128 << 20


#: Compressed bytes per input file, on average, from which the embedded runner totals Google's files in their
#: own order by default (transforms/sorted_input.py): each file costs part files of its own, joined after
#: the run when small. Measured, 80M rows of the 2012 format: 20 sorted files of 22 MB, 7.5-8.0 s against
#: 8.8-8.9 s through run files; 667 files of 0.6 MB, 11.5-12.1 s against 10.2-10.4 s.
SORTED_INPUT_FILE_BYTES = 16 << 20


def default_workers(input_bytes: int) -> int:
    """Worker threads of an embedded import of ``input_bytes`` when --workers is not given."""
    return (os.cpu_count() or 1) if input_bytes >= PARALLEL_INPUT_BYTES else 1


def work_unit_bytes(input_bytes: int) -> int:
    """Compressed bytes of small files read as one element: about 16 units per run, to keep every
    worker busy, but no unit under 1 MiB (per-element overhead) or over 64 MiB (one worker's share)."""
    return max(1 << 20, min(64 << 20, input_bytes // 16))


#: Decompressed text per --slice-size of a checkpointed Flink import: 64 MiB slices let a checkpoint
#: complete every 2 s (0.3-0.7 s each) while a 108 MB file is read, where the whole file held one
#: for 9 s; 64 KiB slices cost 13.2 s instead of 9.6 s on the test corpus (BENCHMARKS.md, "Slices
#: and checkpoint waits").
DEFAULT_SLICE_SIZE = "64m"

#: Decompressed text per byte of gzipped n-gram rows, roughly: it sets how many slices a file is
#: planned in (the last slice reads to the end, so an underestimate costs nothing but balance).
EXPANSION = 6

# Totalling n-grams.

#: At least two keys, so that two workers share even a small input.
MIN_SHARDS = 2


# Keys of the aggregation in Flink's keyed state (checkpointed mode: total.TotalNgramRanges).

#: The most bytes one key's group, accumulator or keyed-state value may reach (issue 14): checkpointed
#: mode holds a key's values as one RocksDB value (JNI: under 2 GB), and the Python worker merges them
#: in memory. (Batch mode once grouped them the same way, as one Java List per key, Beam issue #18848,
#: which its sort buffer refused beyond ~70 MB; it now totals through run files, transforms/spill.py.)
KEY_BUDGET = 64 << 20
#: The environment variable that sets another budget, in bytes (tests force many keys with a tiny one).
KEY_BUDGET_VARIABLE = "NGRAMFLOW_KEY_BUDGET"


def key_budget() -> int:
    return int(os.environ.get(KEY_BUDGET_VARIABLE, KEY_BUDGET))


#: Bytes of run tables per byte of gzipped input, at most, when no input file could be sampled
#: (transforms/density.py measures it otherwise). Measured on the scale corpora (corpus.scale): shape b,
#: one line per 2-gram and 17 gzip bytes per n-gram, 6.9-7.3 (9.1-9.5 with --keep-years); shape a, 2012
#: 1-grams, 0.5-0.6 (3.4-4.9). 12 is a quarter above the most distinct-heavy input measured. (Measured
#: when a year set took 88 bytes a run; as a span (columnar.py) it takes fewer, so 12 bounds them still.)
TABLE_BYTES_PER_INPUT_BYTE = 12
#: A key is planned for this share of the budget; the rest is the margin for an unlucky hash, and for
#: files denser than the sampled ones (measured keys held 7-10 MiB of the 16 planned).
KEY_SHARE = 4


#: Samples per n-gram range when checkpointed mode cuts its run tables into ranges (transforms/sample_sort.py),
#: of a key's share of the budget each, rows counted at 64 bytes: ranges come out within a few tenths of it.
SAMPLES_PER_RANGE, SAMPLED_ROW_BYTES = 64, 64


#: Pieces per range in which checkpointed mode spreads run tables over its keys (total.SpreadPieces): a
#: read table may hold more than a key's share, and pieces dealt in turn keep every key within a few
#: pieces of its share.
PIECES_PER_RANGE = 4


def range_bytes() -> int:
    """The bytes of run tables per n-gram range of checkpointed mode: a key's share of the budget."""
    return key_budget() // KEY_SHARE


def range_sample_every() -> int:
    """One n-gram in this many is a sample of the cut into ranges."""
    return max(1, range_bytes() // (SAMPLES_PER_RANGE * SAMPLED_ROW_BYTES))


def merge_shards(input_bytes: int, density: float | None) -> int:
    """Shards of the n-gram merge in checkpointed mode, one key each: as many as the input needs for every key's
    table to stay within its share of the budget, with no cap (each is one part file per order).
    ``density``: run-table bytes per input byte (transforms/density.py), None if unknown."""
    density = TABLE_BYTES_PER_INPUT_BYTE if density is None else density
    return max(MIN_SHARDS, -(-int(input_bytes * density * KEY_SHARE) // key_budget()))


# Totalling through sorted run files on disk (transforms/spill.py: the embedded runner, Flink batch).

#: Bytes of run tables a worker process buffers before it spills them as sorted run files, and the bytes
#: of run-file batches a shard's merge holds at once (shared by the threads of an embedded import,
#: spill_budget). A worker's peak is about twice it (the buffer and its merge, transforms/merge.py), on
#: top of the read stage's.
SPILL_BYTES = 128 << 20
#: The environment variable that sets another spill budget, in bytes (tests force many run files and
#: merge passes with a tiny one).
SPILL_BYTES_VARIABLE = "NGRAMFLOW_SPILL_BYTES"
#: The parts a worker's last flush of run tables is merged in at once, each on a thread, at most: the last worker's
#: of the read stage, and the last merging thread's of its tokens (RunSpiller.flush), which the stage's end waits
#: for with no other work left.
LAST_FLUSH_PARTS = 2


def spill_bytes() -> int:
    return int(os.environ.get(SPILL_BYTES_VARIABLE, SPILL_BYTES))


def spill_budget(workers: int) -> int:
    """The spill budget of each of ``workers`` that share one process's (spill_bytes): the embedded runner's
    worker threads. Measured, 80M rows of the 2012 format, 2 threads: 128 MiB each peaked at 925-942 MiB,
    64 MiB each at 749-770 MiB, in the same CPU time (21.2 s user, 2 runs each)."""
    return max(1, spill_bytes() // max(1, workers))


#: Run rows per n-gram range of the spill path: one part file per order and range, so files of a few
#: tens of MB (zstd Parquet) and about one range per 2M distinct n-grams to spread over workers.
RANGE_ROWS = 1 << 21
#: The environment variable that sets other run rows per range (tests force many ranges with few rows).
RANGE_ROWS_VARIABLE = "NGRAMFLOW_RANGE_ROWS"


def range_rows() -> int:
    return int(os.environ.get(RANGE_ROWS_VARIABLE, RANGE_ROWS))


def token_range_rows() -> int:
    """Token run rows per range of the vocabulary's external sort: half an n-gram range's. A worker's token runs
    hold a token about once (vocabulary.TokenRuns), where each table once gave all of its own: ranges of
    RANGE_ROWS rows held twice the tokens they had, and ranking them peaked 60-90 MiB higher (2012 sorted, 80M
    rows: 572-605 MiB, against 528-561 MiB with half the rows, in the same time)."""
    return max(1, range_rows() // 2)

#: Run files a merge reads at once; a shard with more is merged in passes. Each file's batches are
#: sized to 1/MERGE_FANIN of the budget, so more files at once means smaller reads.
MERGE_FANIN = 16
#: Compression of run files (Arrow IPC), written once and read once, where the disk may not have room for them
#: uncompressed (spill_compression). Measured on 8M distinct 2-grams (one run each, 2 shared cores): zstd
#: 59.7 s and 101 MB of run files, lz4 40.8 s and 182 MB, none 41.2 s and 965 MB; peak RSS the same (0.9 GB).
#: On 80M rows of the 2012 format in 668 files (3 runs each, alternated): lz4 7.81-8.50 s, none 7.45-8.11 s
#: and 610 MB of run files (LZ4 was 6% of the import's CPU).
SPILL_COMPRESSION = "lz4"
#: Run files are written uncompressed when the local disk they go to has this many times the input's
#: decompressed text free: that text bounds them (a run holds an n-gram once, for all of its lines).
UNCOMPRESSED_SPILL_ROOM = 4


def spill_compression(input_bytes: int, folder: str, shared: bool) -> str | None:
    """The compression of the run files of an import of INPUT_BYTES (gzipped) spilled into FOLDER: none when
    its local disk has room to spare (UNCOMPRESSED_SPILL_ROOM), else SPILL_COMPRESSION; always that for
    remote storage and for a SHARED folder (a cluster's build folder, which other machines read), where every
    byte crosses the network."""
    if shared or "://" in folder:
        return SPILL_COMPRESSION
    existing = os.path.abspath(folder)
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    free = shutil.disk_usage(existing).free
    return None if input_bytes * EXPANSION * UNCOMPRESSED_SPILL_ROOM <= free else SPILL_COMPRESSION


#: Compression of the vocabulary's token run files: none. Their rows are a token and two counts, at most a
#: vocabulary's worth a worker, and LZ4 cost more than the bytes it saved (80M rows: 0.3 s of 12.5 s of CPU).
TOKEN_SPILL_COMPRESSION = None

#: The cache of the tokens a worker gave its token runs lately (vocabulary.TokenRuns), in bytes, at most: 512K
#: tokens of up to 23 bytes, taken from the worker's token budget (at most half of it). Measured on one worker's
#: tables of 2-grams (BENCHMARKS.md, fourteenth round): larger caches leave more tokens out at less cost a token
#: (their look-ups are fetched ahead); 4 to 16 MiB took the tokens given from 458K to 106K of 5.3M 2-grams over
#: 65K tokens, and from 3.06M to 2.21M of 3.95M 2-grams over 2.3M.
RECENT_TOKENS_BYTES = 16 << 20

# The vocabulary.

#: Tokens of a vocabulary part file, at most (the external sort's; the sample sort's parts hold about as many).
PART_TOKENS = 1 << 20
#: The environment variable that sets other tokens per part (tests force many parts with few tokens).
PART_TOKENS_VARIABLE = "NGRAMFLOW_PART_TOKENS"


def part_tokens() -> int:
    return int(os.environ.get(PART_TOKENS_VARIABLE, PART_TOKENS))

#: N-gram keys per token key, beyond MIN_TOKEN_SHARDS token keys (checkpointed Flink: BuildVocabulary).
#: Each n-gram key sends every token key a table of its tokens, so a token key receives about
#: n-gram keys / token keys of them: a fixed ratio keeps its group from growing with the input
#: (measured: 1.44 MiB at 99 n-gram keys and 64 token keys, BENCHMARKS.md "Flink: bounded keyed state").
NGRAM_KEYS_PER_TOKEN_KEY = 8
MIN_TOKEN_SHARDS = 64


def token_shards(ngram_shards: int) -> int:
    return min(ngram_shards, max(MIN_TOKEN_SHARDS, ngram_shards // NGRAM_KEYS_PER_TOKEN_KEY))

# Writing.

#: Rows per Parquet row group. Files are sorted by n-gram, so DuckDB prunes row groups by their
#: min/max statistics: a point look-up reads one row group per part file of its order, and 32k
#: rows read 3.5x fewer bytes than 128k at no measured cost to full scans (BENCHMARKS.md, "Query").
#: The writer reads it at each write: ``benchmarks.lookup_dataset --row-group-rows`` sets others to measure.
ROW_GROUP_ROWS = 32 * 1024

# The MKN stage.


def mkn_memory() -> int:
    """The MKN stage's default memory budget: a quarter of the machine's memory (which the import, a
    Flink cluster or other jobs may be using too), at most 8 GiB."""
    return min(8 << 30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4)


#: What the stage's process holds besides its tasks: Python with Beam, pyarrow and DuckDB loaded peaks at
#: 193 MiB before any task; twice that leaves room for Beam's own buffers of references and records.
MKN_PROCESS_BYTES = 384 << 20
#: What a task holds per row of its bucket at its peak (the order-n context pass, the largest: the bucket's
#: successors and lower-order rows read, the kernel's hash map and output, the output's Arrow columns). Measured: one
#: worker with 1M-row buckets (42.9M n-grams, order 5) peaked at 0.66 GiB, ~0.25 GiB of it before any task.
MKN_TASK_ROW_BYTES = 400
#: The least of the budget each worker of ``ngramflow mkn`` gets when the number of workers is left to it.
MKN_WORKER_MEMORY = 1 << 30

#: Rows of the largest order in the buckets of the tasks that run at once (one per worker), where the memory
#: budget allows them. A task's peak memory follows its bucket's rows, so the stage's peak stops growing once
#: the largest order fills one bucket. More, smaller buckets cost some CPU time in per-task overhead (more,
#: smaller files).
MKN_BUCKET_ROWS = 1 << 20
#: The environment variable that sets other rows per bucket (tests force many buckets with few rows).
MKN_BUCKET_ROWS_VARIABLE = "NGRAMFLOW_MKN_BUCKET_ROWS"


def mkn_workers(largest_order_rows: int, memory: int) -> int:
    """Worker threads of ``ngramflow mkn`` on the embedded runner when --workers is not given: one per core once
    the largest order fills more than one bucket, while each gets MKN_WORKER_MEMORY of the budget MEMORY; else 1.

    From one bucket on, so that the stage's peak, a bucket's task per worker, is the same at every size above it.
    On a loaded 2-core machine a second thread did not pay at 2.8M 5-grams (3.75M words: 15.7 s wall with one,
    17.5 s with two) and did at 20M (30M words: 91.7 s and 77.7 s; BENCHMARKS.md, "MKN")."""
    if largest_order_rows <= MKN_BUCKET_ROWS:
        return 1
    return max(1, min(os.cpu_count() or 1, memory // MKN_WORKER_MEMORY))


def mkn_buckets(largest_order_rows: int, workers: int, memory: int) -> int:
    """Buckets of every table of the stage: enough for the WORKERS tasks that run at once (threads of one
    process, with the embedded runner) to hold MKN_BUCKET_ROWS rows of the largest order together, or fewer
    if they would not fit the budget MEMORY; at least one per worker. So the peak is the same with one worker
    or more (42.9M n-grams, order 5, two workers: 41 buckets of 0.5M 5-grams peaked at 0.94 GiB, 21 of 1M at
    1.38 GiB, for 73.2 and 71.3 s of CPU)."""
    task_bytes = max(64 << 20, (memory - MKN_PROCESS_BYTES) // workers)
    rows = min(int(os.environ.get(MKN_BUCKET_ROWS_VARIABLE, MKN_BUCKET_ROWS)) // workers,
               task_bytes // MKN_TASK_ROW_BYTES)
    rows = max(1, rows)
    return max(workers, -(-largest_order_rows // rows))


@functools.cache
def glibc(name: str):
    """glibc's function NAME (malloc_trim, mallopt, prctl), or None where the C library has none (macOS, musl):
    looked up among the symbols the process has loaded, where ctypes.util.find_library would run ldconfig to find
    the library's file."""
    return getattr(ctypes.CDLL(None), name, None)


#: mallopt's parameters (glibc's malloc.h) and what share_one_malloc_arena sets them to.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_KEPT_FREE_BYTES = 1 << 30


def share_one_malloc_arena() -> None:
    """glibc's malloc for an import's process, set before its threads begin: one arena for all of them, and the
    memory they free kept for their next allocations (until release_freed_memory gives it back), however large.

    By default glibc gave each thread that allocates an arena of its own, gave back to the system what a thread
    freed at its arena's top, and mapped each allocation of 128 KiB and more afresh (up to 32 MiB as it
    adapted): the kernel's columns and a spill's merge came in new pages, every one a fault to be zeroed (2.3 us
    each; the system's share of the import's CPU was a sixth, most of it faults), and what one thread's arena
    kept was no use to another's. 80M rows, 3 runs each, in turn: 2020 shards 3.73-3.78 -> 3.61-3.72 s, peak RSS
    430-450 -> 385-392 MiB, 198-200K -> 146-157K faults; 8 unsorted 2012 files 4.96-5.07 -> 4.89-4.97 s, peak
    RSS 623-644 -> 549-574 MiB, 373-381K -> 282-287K faults; the same user CPU (one arena's lock was not
    contended). BENCHMARKS.md, twenty-seventh round."""
    mallopt = glibc("mallopt")
    if mallopt is not None:
        for parameter, value in ((_M_ARENA_MAX, 1), (_M_TRIM_THRESHOLD, _KEPT_FREE_BYTES),
                                 (_M_MMAP_THRESHOLD, _KEPT_FREE_BYTES)):
            mallopt(parameter, value)


def release_freed_memory() -> None:
    """Give the memory the process has freed back to the system, before a stage that runs in threads of its own:
    what the reading freed is kept for reuse (share_one_malloc_arena), and the stages after it peaked on top of
    it (the 2020 shards of 80M rows, 502-530 MiB without, 433-477 MiB with; BENCHMARKS.md, tenth round, when each
    thread had an arena of its own)."""
    trim = glibc("malloc_trim")
    if trim is not None:
        trim(0)
