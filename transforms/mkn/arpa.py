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

Tokens are written as readers expect them: _START_ as <s>, _END_ as </s>. Lines are
formatted by DuckDB from the model's Parquet files and written as Arrow string buffers, so
no Python object is made per line.
"""

import numpy as np

from ngramflow.schemas import END, START
from ngramflow.transforms.mkn.tables import text

TOKENS = {START: "<s>", END: "</s>"}

#: Model rows formatted at once.
BATCH_ROWS = 64 * 1024


def arpa_ngram(column: str) -> str:
    """SQL: the n-gram with the boundary tokens spelled as readers expect."""
    spelled = " ".join(f"WHEN {text(token)} THEN {text(arpa)}" for token, arpa in TOKENS.items())
    boundary = " OR ".join(f"contains({column}, {text(token)})" for token in TOKENS)
    return (f"CASE WHEN {boundary} THEN array_to_string(list_transform(string_split({column}, ' '), "
            f"lambda t: CASE t {spelled} ELSE t END), ' ') ELSE {column} END")


def number(column: str) -> str:
    """SQL: seven significant digits, as float32 holds; -0 printed as 0."""
    return f"printf('%.7g', {column} + 0.0::DOUBLE)"


def entry(ngram: str, log10_prob: str, log10_backoff: str) -> str:
    """SQL: an entry's line, newline included (no backoff field where the backoff is NULL)."""
    return (f"{number(log10_prob)} || chr(9) || {arpa_ngram(ngram)} || "
            f"CASE WHEN {log10_backoff} IS NULL THEN '' ELSE chr(9) || {number(log10_backoff)} END || chr(10)")


def header(counts: list[int]) -> str:
    lines = ["\\data\\"] + [f"ngram {order}={count}" for order, count in enumerate(counts, 1)]
    return "\n".join(lines) + "\n\n"


def _text_bytes(lines) -> memoryview:
    """The concatenated values of an Arrow string array without nulls: one slice of its data buffer."""
    wide = lines.type.id == 34  # large_string
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
    start, end = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return memoryview(lines.buffers()[2])[start:end]


def write_section(con, order: int, paths: list[str], fh) -> None:
    """An order's section, from its model files, into the binary file FH."""
    fh.write(f"\\{order}-grams:\n".encode())
    if paths:
        listing = ", ".join(f"'{p}'" for p in paths)
        reader = con.sql(
            f"SELECT {entry('ngram', 'log10_prob', 'log10_backoff')} AS line "
            f"FROM read_parquet([{listing}], hive_partitioning = false)").to_arrow_reader(BATCH_ROWS)
        for batch in reader:
            fh.write(_text_bytes(batch.column(0)))
    fh.write(b"\n")


FOOTER = "\\end\\\n"
