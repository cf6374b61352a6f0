"""Where everything lives in a dataset directory: every path below is relative to the dataset.

Every writer (pipeline/, transforms/, benchmarks/) and every reader (query/)
takes its paths from here. A complete dataset:

    _manifest.json             written last; its presence means "complete" (schemas/manifest.py)
    ngrams/order=N/*.parquet   NGRAMS (or NGRAMS_WITH_YEARS with --keep-years), one file per shard
    vocabulary/*.parquet       VOCABULARY
    rejects/*.parquet          REJECTS
    totalcounts.parquet        TOTALCOUNTS (when per-year totals were given)
    mkn/ngrams/order=N/        MKN_NGRAMS   (with --mkn-order or `ngramflow mkn`)
    mkn/contexts/order=N/      MKN_CONTEXTS
    mkn/discounts.parquet      MKN_DISCOUNTS

While a run is going, and after one that failed: ``_INCOMPLETE`` (and
``mkn/_INCOMPLETE`` for the MKN stage) says so and why, and ``_build/`` holds
the dataset being built, in the same layout, with the run's statistics for the
manifest under ``_work/`` and, on the embedded runner, the sorted run files of the
aggregation under ``_spill/`` (neither is published). Folders partitioned by order are
named ``order=N`` so that readers (DuckDB's Hive partitioning) get the order as
a column.
"""

MANIFEST = "_manifest.json"
INCOMPLETE = "_INCOMPLETE"

NGRAMS = "ngrams"
VOCABULARY = "vocabulary"
REJECTS = "rejects"
TOTALCOUNTS = "totalcounts.parquet"

MKN = "mkn"
MKN_NGRAMS = f"{MKN}/ngrams"
MKN_CONTEXTS = f"{MKN}/contexts"
MKN_DISCOUNTS = f"{MKN}/discounts.parquet"
#: The marker of a running or failed ``ngramflow mkn`` stage.
MKN_INCOMPLETE = f"{MKN}/{INCOMPLETE}"

#: Where a run builds its dataset, and, inside it, the marker that proves ngramflow made that folder
#: and the record of a publication under way (pipeline/output.py).
BUILD, BUILD_MARKER, JOURNAL = "_build", ".ngramflow-build", "_publish.json"
#: Scratch records of a run (statistics for the manifest, one JSON file per element); never published.
WORK = "_work"
FILE_STATS, ORDER_STATS = f"{WORK}/files", f"{WORK}/orders"
#: The n-gram range of each part file, on the spill path (transforms/spill.py), for the manifest's "ranges".
RANGES = f"{WORK}/ranges"
#: An import totalled in the input's own order (transforms/sorted_input.py): the part files it wrote, named
#: by the file they came from until the run numbers them in n-gram order, and the n-grams each input file held
#: (a Parquet table of its spans, sorted_input.SPANS, rather than a JSON record).
PIECES, KEY_SPANS = f"{WORK}/pieces", f"{WORK}/key_spans"
#: An import from a Kafka queue: the end-of-corpus marker's count of distinct files, written when the job
#: has read the marker (pipeline/kafka/read.py); the run then ends the job (pipeline/kafka/end.py).
QUEUE_END = f"{WORK}/queue-end.json"
#: ... and a second file published under a name already counted, which fails the run (pipeline/kafka/end.py).
QUEUE_CONFLICT = f"{WORK}/queue-conflict.json"
#: Scratch of the embedded runner's aggregation: sorted run files (transforms/spill.py); never published.
SPILL = "_spill"
MKN_ORDER_STATS, MKN_ORPHANS = f"{WORK}/mkn_orders", f"{WORK}/mkn_orphans"


def by_order(table: str, order: int) -> str:
    """The folder of one order's rows of a table partitioned by order (NGRAMS, MKN_NGRAMS, MKN_CONTEXTS)."""
    return f"{table}/order={order}"


def ngrams_folder(order: int) -> str:
    """The folder of one order's n-grams."""
    return by_order(NGRAMS, order)


def part(folder: str, number: int) -> str:
    """The name of a numbered part file in FOLDER, without its ``.parquet`` (the writer adds it)."""
    return f"{folder}/part-{number:05d}"


def parts(folder: str) -> str:
    """The glob of the part files of FOLDER."""
    return f"{folder}/*.parquet"


def parts_of_every_order(table: str) -> str:
    """The glob of the part files of every order of a table partitioned by order."""
    return parts(f"{table}/*")
