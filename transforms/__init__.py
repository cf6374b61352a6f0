"""The import's transforms, one step of the data per module, in the order the data meets them.

Each line: module, what it does, what goes in -> what comes out.

    units.py       (path, size) of the input files -> work units (pack_files), largest first
    lines.py       one file -> its pieces of whole lines, each collapsed into a run table: stream-decompress
                   into reused buffers, cut into chunks of whole lines, parse and collapse each chunk
                   on a thread ahead (LineReader, collapsed_pieces); needs no Beam
    head_start.py  the first work units' files -> their pieces, read by a process forked before Beam
                   loads, for the read stage to take (the embedded command's)
    read.py        work units of files -> run tables: each file's pieces (lines.py, or the head start's);
                   named reject tables and per-file statistics on the side (ReadNgramFiles)
    formats.py     one line -> (tokens, [(year, match, volume)]) or Malformed: the three line
                   formats, the careful parser that defines what is accepted, format detection
    kernel.py      chunk of lines -> run table + dropped rows + rejects: the native kernel (native/,
                   Rust) in one pass, or parse.py then collapse.py for a chunk it cannot vouch for
    parse.py       chunk of lines -> year rows (ROW_SCHEMA, file order) + rejects (REJECTS):
                   formats.py line by line, the reference the kernel is tested against
    policy.py      the row policy (year window, POS tags, case folding) that collapse.py and the
                   kernel apply
    collapse.py    year rows in file order -> run table (one row per run of an n-gram's rows),
                   policy applied; what crosses the shuffle
    shards.py      tables -> (shard, sub-table) by a stable hash of a key column
    merge.py       run tables -> one row per n-gram, sorted (merge_runs, through native.py); a log-structured
                   merge combiner
    runfiles.py    tables -> sorted run files within a byte budget (RunSpiller), or as they come when
                   sorted and apart already (AscendingRuns); run files -> their
                   rows in key order, optionally one key range, in bounded pieces (a streaming k-way
                   merge, in passes above MERGE_FANIN files): the embedded runner's external sort
    density.py     a sample of the input files -> run-table bytes per input byte, which sets the
                   keys of checkpointed Flink's merge
    total.py       run tables -> (range, n-gram table) of schemas.NGRAMS rows at or above the
                   minimum count, contiguous sorted ranges cut by a sample sort and each merged in
                   memory (TotalNgramRanges): checkpointed Flink; per-order totals for the manifest
    sample_sort.py (shard, table) -> (part, piece): tables cut into contiguous ranges of a key's order
                   of a bounded size, at splitters from a sample (CutIntoParts; ranges, vocabulary)
    spill.py       run tables -> run files -> n-gram ranges planned from their bounds -> one part
                   file per order and range, each a contiguous sorted n-gram range, written as the
                   range's k-way merge streams (TotalNgramsOnDisk, the embedded runner); token run files
    vocabulary.py  (shard, n-gram table) -> (name, vocabulary table): every token, dense ids, numbered
                   in parts of a sample sort (checkpointed Flink)
    vocabulary_sort.py  token run files (unigram rows ranked as written) -> token ranges of longer
                   n-grams' tokens, those without a unigram row kept, in parallel -> id ranges numbered in
                   parallel into the vocabulary's part files, the same ids by an external sort
    sinks.py       (name, table or record) -> a Parquet or JSON file of that name, written under a
                   temporary name and renamed, so a retried bundle replaces it (WriteTables, WriteRecords);
                   the same for files written piece by piece, encoded on a thread of their own (StreamedTables);
                   the n-gram files' Parquet encoded by the kernel (native/src/parquet.rs)
    wire.py        a table -> its pickled bytes: Arrow IPC with LZ4, how every table crosses the runner
                   and sits in Flink's keyed state (registered on import of this package)
    table_coder.py a PCollection of tables -> the same bytes, sized without encoding (Beam's coder)
    native.py      the native kernel's column functions: keys -> their order and groups; n-grams ->
                   their orders, their distinct tokens with each one's unigram row; year span masks ->
                   first, last and count, and ORed by group; tables -> Parquet row groups (ParquetFile)
    columnar.py    vectorized helpers the steps share: runs, year bit masks (kept as spans), series,
                   shard hash
    checked.py     sums of counts that raise CountOverflow instead of wrapping past int64
    pools.py       thread pools whose threads the OS knows by name (their Python names), for profiles by thread
    mkn/           n-gram part files -> Modified Kneser-Ney model files; see mkn/__init__.py
"""

from ngramflow.transforms import wire  # noqa: E402,F401  (registers how tables are pickled)
