"""The ARPA back-off language model text format, as KenLM's lmplz writes it.

    \\data\\
    ngram 1=COUNT
    ...
    (blank line)
    \\1-grams:
    LOG10_PROB TAB w1 TAB LOG10_BACKOFF     (orders below the highest)
    ...
    \\N-grams:
    LOG10_PROB TAB w1 ... wN                (the highest order has no backoff)
    (blank line)
    \\end\\

Tokens are written as readers expect them: _START_ as <s>, _END_ as </s>; numbers as C's
printf("%.7g"). DuckDB reads the model's Parquet files in batches and the native kernel formats
each batch's lines into one bytes object (native/src/arpa.rs), so no Python object is made per line.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow.transforms.kernel import _kernel

#: Model rows formatted at once.
BATCH_ROWS = 64 * 1024


def header(counts: list[int]) -> str:
    lines = ["\\data\\"] + [f"ngram {order}={count}" for order, count in enumerate(counts, 1)]
    return "\n".join(lines) + "\n\n"


def entry_lines(ngrams: pa.Array, log10_probs: pa.Array, log10_backoffs: pa.Array) -> bytes:
    """The ARPA lines of a batch of entries (no backoff field where the backoff is null)."""
    ngrams = ngrams.cast(pa.large_string())
    offsets = np.frombuffer(ngrams.buffers()[1], np.int64)[ngrams.offset:ngrams.offset + len(ngrams) + 1]
    data = ngrams.buffers()[2]
    has_backoff = log10_backoffs.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    return _kernel.arpa_lines(
        offsets.tobytes(), b"" if data is None else data.to_pybytes(),
        log10_probs.to_numpy(zero_copy_only=False).astype(np.float64).tobytes(),
        pc.fill_null(log10_backoffs, 0.0).to_numpy(zero_copy_only=False).astype(np.float64).tobytes(),
        has_backoff.tobytes())


def write_section(con, order: int, paths: list[str], fh) -> None:
    """An order's section, from its model files, into the binary file FH."""
    fh.write(f"\\{order}-grams:\n".encode())
    if paths:
        listing = ", ".join(f"'{p}'" for p in paths)
        reader = con.sql(f"SELECT ngram, log10_prob, log10_backoff FROM read_parquet([{listing}], "
                         "hive_partitioning = false)").to_arrow_reader(BATCH_ROWS)
        for batch in reader:
            fh.write(entry_lines(*batch.columns))
    fh.write(b"\n")


FOOTER = "\\end\\\n"
