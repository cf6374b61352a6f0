"""Adjusted counts: what Kneser-Ney counts in place of raw counts.

a(w1..wn) is the raw count for the model's highest order and for n-grams that
begin with _START_ (nothing precedes a sentence start, so there is no left
context to count); for every other n-gram it is N1+(. w1..wn), the number of
distinct (n+1)-grams in the input whose suffix it is. KenLM gives the unigrams
<s> and <unk> the count 0.

Published counts are not raw text, so two cases KenLM never meets are handled
explicitly, and each is counted in the manifest:

- SUFFIX: an n-gram missing from the input but implied as the suffix of a
  longer one (e.g. the 1-gram files lack _END_, or only some files of an order
  were imported). Its continuation count is known exactly, so it is added.
- FLOOR: an n-gram of the input whose left extensions were all pruned away
  (Google publishes only totals >= 40). It did occur, after something, so it
  has at least one left extension: its count is that lower bound, 1.

The joins and counts are the native kernel's (native.py, native/src/mkn.rs: ``adjust``). Two passes:

    scatter_part   one input part file of order n -> "input" rows (ngram, raw) in the bucket of the
                   n-gram, and "extensions" (suffix, 1) in the bucket of the suffix, one per n-gram (a
                   part file's suffixes hardly repeat: summing them there cost a hash look-up per
                   n-gram and saved few rows). At the model's highest order (above 1) a is the raw
                   count, which the file holds: its rows go straight to "adjusted" in the bucket of
                   their context, with the file's summary, and skip adjust_bucket
    adjust_bucket  one bucket of order n's "input" and "extensions" -> "adjusted" rows (ngram, a) in
                   the bucket of their context (order 1: of the n-gram), and the order's summary:
                   [n-grams, t1..t4, one count per origin] (+ the unigram context's sums at order 1)
"""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ngramflow.schemas import RESERVED_TOKENS
from ngramflow.transforms.mkn import native
from ngramflow.transforms.mkn.tables import Index, Work, Writers

#: Where an adjusted count came from; the kernel's origin codes are indices into this tuple.
INPUT, SUFFIX, FLOOR, RESERVED = "input", "suffix", "floor", "reserved"
ORIGINS = (INPUT, SUFFIX, FLOOR, RESERVED)

RAW = native.schema(raw=pa.int64())
EXTENSIONS = native.schema(extensions=pa.int64())
ADJUSTED = native.schema(a=pa.int64())

#: Rows of a part file the scatter pass deals into buckets at once.
SCATTER_ROWS = 256 * 1024


def scatter_part(work: Work, order: int, path: str, model_order: int) -> tuple[list, list | None]:
    """An input part file's (ngram, match_count) rows of ORDER -> (files written: its "input" and
    "extensions" buckets, or at the highest order its "adjusted" ones; the file's summary of the
    highest order, else None). Read and dealt SCATTER_ROWS at a time: a part file's rows are the
    import's to size, the task's memory the stage's."""
    # The import totals each n-gram once, in one part file, so at the highest order the file's rows are its own.
    highest = order == model_order > 1
    table, key = ("adjusted", native.CONTEXT) if highest else ("input", native.NGRAM)
    summary = summary_of(np.zeros(0, np.int64), np.zeros(0, np.int64))
    with Writers(work, table, order) as counted, Writers(work, "extensions", order - 1) as extending:
        for batch in pq.ParquetFile(path).iter_batches(SCATTER_ROWS, columns=["ngram", "match_count"]):
            rows = pa.table({"ngram": batch.column(0), "a" if highest else "raw": batch.column(1)})
            counted.write(native.lay_out(rows, key, work.buckets))
            if highest:
                counts = batch.column(1).to_numpy()
                batch_summary = summary_of(counts, np.full(len(counts), ORIGINS.index(INPUT)))
                summary = [total + more for total, more in zip(summary, batch_summary)]
            if order > 1:
                extending.write(native.suffixes(batch.column(0), work.buckets))
    return counted.written + extending.written, summary if highest else None


def summary_of(a: np.ndarray, origins: np.ndarray) -> list[int]:
    """An order's summary of adjusted counts A and their ORIGINS: [n-grams, t1..t4, one count per origin]."""
    return ([len(a)] + [int(np.count_nonzero(a == k)) for k in (1, 2, 3, 4)]
            + np.bincount(origins, minlength=len(ORIGINS)).tolist())


def successor_sums(a: np.ndarray) -> list[int]:
    """A context's sums over its successors' adjusted counts A: the sum, N1, N2, N3+ (context.py)."""
    return [int(a.sum(dtype=object)) if len(a) else 0, int(np.count_nonzero(a == 1)), int(np.count_nonzero(a == 2)),
            int(np.count_nonzero(a >= 3))]


def adjust_bucket(work: Work, index: Index, order: int, bucket: int, model_order: int) -> tuple[list, list]:
    """One bucket of order ORDER -> ("adjusted" files written, the bucket's summary of the order)."""
    # The reserved unigrams are always in the model, with no raw count unless the input has them: each in its bucket.
    reserved = [t for t in RESERVED_TOKENS if native.bucket_of(t, work.buckets) == bucket] if order == 1 else []
    laid = native.adjust(work.read(index, "input", order, bucket, RAW),
                         work.read(index, "extensions", order, bucket, EXTENSIONS), reserved, order, model_order,
                         work.buckets)
    written = work.write("adjusted", order, native.Laid(laid.table.select(["ngram", "a"]), laid.starts))
    a = laid.table.column("a").to_numpy()
    summary = summary_of(a, laid.table.column("origin").to_numpy())
    if order == 1:  # the unigram context '', whose successors are every unigram: summed over the buckets
        summary += successor_sums(a)
    return written, summary
