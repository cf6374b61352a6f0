"""Collapse year rows into runs: the per-file pre-aggregation, vectorized.

Google's files keep all rows of an n-gram together, so consecutive rows with
the same n-gram are summed into one *run* right after parsing. A table of runs
(RUN schema) is what crosses the shuffle: one row per n-gram per chunk instead
of one per year. The row policy (year window, POS, case) is applied here too:
the year window on year rows, the POS and case rules once per run.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from transforms import columnar
from transforms.filters import TAGGED_IN_NGRAM, RowPolicy, fold_case


def run_schema(keep_years: bool) -> pa.Schema:
    fields = [("ngram", pa.string()), ("match", pa.int64()), ("volume", pa.int64()), ("years", columnar.MASK_TYPE)]
    return pa.schema(fields + ([("year_series", columnar.SERIES_TYPE)] if keep_years else []))


def collapse(rows: pa.Table, policy: RowPolicy, keep_years: bool) -> tuple[pa.Table, int]:
    """(runs, number of year rows the policy dropped) of a table of year rows in file order."""
    before = rows.num_rows
    if policy.year_min is not None:
        rows = rows.filter(pc.greater_equal(rows["year"], policy.year_min))
    if policy.year_max is not None:
        rows = rows.filter(pc.less_equal(rows["year"], policy.year_max))
    if policy.pos == "drop" and rows.num_rows:
        rows = rows.filter(pc.invert(pc.match_substring_regex(rows["ngram"], TAGGED_IN_NGRAM)))
    dropped = before - rows.num_rows
    if rows.num_rows == 0:
        return run_schema(keep_years).empty_table(), dropped

    ngram = rows["ngram"].combine_chunks()
    starts = columnar.run_starts(ngram)
    ids = columnar.run_ids(starts, rows.num_rows)
    years = columnar.numpy(rows["year"])
    matches, volumes = columnar.numpy(rows["match"]), columnar.numpy(rows["volume"])
    keys = ngram.take(pa.array(starts))
    if policy.lowercase:
        keys = pa.array([" ".join(fold_case(t) for t in k.split(" ")) for k in keys.to_pylist()], pa.string())
    columns = [
        keys,
        pa.array(np.add.reduceat(matches, starts)),
        pa.array(np.add.reduceat(volumes, starts)),
        columnar.mask_array(columnar.year_masks(years, ids, len(starts))),
    ]
    if keep_years:
        columns.append(columnar.series_by_run(ids, years, matches, volumes, len(starts)))
    return pa.Table.from_arrays(columns, schema=run_schema(keep_years)), dropped
