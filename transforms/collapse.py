"""Collapse year rows into runs: the per-file pre-aggregation, vectorized.

Google's files keep all rows of an n-gram together, so consecutive rows with
the same n-gram are summed into one *run* right after parsing. A table of runs
(RUN schema) is what crosses the shuffle: one row per n-gram per chunk instead
of one per year. The row policy (year window, POS, case) is applied here too:
the year window on year rows, the POS and case rules once per run.
"""

import numpy as np
import pyarrow as pa

from ngramflow.schemas import YEAR_SERIES
from ngramflow.transforms import columnar
from ngramflow.transforms.policy import TAGGED_IN_NGRAM, RowPolicy, fold_case


def run_schema(keep_years: bool) -> pa.Schema:
    fields = [("ngram", pa.string()), ("match", pa.int64()), ("volume", pa.int64()), ("years", columnar.MASK_TYPE)]
    return pa.schema(fields + ([("year_series", YEAR_SERIES)] if keep_years else []))


def _kept_rows(rows: pa.Table, keys: pa.Array, ids: np.ndarray, policy: RowPolicy) -> np.ndarray | None:
    """Which year rows the policy keeps (None: all of them)."""
    keep = None
    if policy.year_min is not None or policy.year_max is not None:
        years = columnar.numpy(rows["year"])
        keep = np.ones(len(years), bool)
        if policy.year_min is not None:
            keep &= years >= policy.year_min
        if policy.year_max is not None:
            keep &= years <= policy.year_max
    if policy.pos == "drop":
        import pyarrow.compute as pc  # where it is used: transforms/columnar.py's docstring says why

        tagged = columnar.numpy(pc.match_substring_regex(keys, TAGGED_IN_NGRAM))
        if tagged.any():
            keep = ~tagged[ids] if keep is None else keep & ~tagged[ids]
    return keep


def collapse(rows: pa.Table, starts: np.ndarray, policy: RowPolicy, keep_years: bool) -> tuple[pa.Table, int]:
    """(runs, number of year rows the policy dropped) of year rows in file order.

    ``starts`` are the row indices where runs of equal n-grams begin.
    """
    if rows.num_rows == 0:
        return run_schema(keep_years).empty_table(), 0
    keys = columnar.whole(rows["ngram"]).take(pa.array(starts))
    ids = columnar.run_ids(starts, rows.num_rows)
    years = columnar.numpy(rows["year"])
    matches, volumes = columnar.numpy(rows["match"]), columnar.numpy(rows["volume"])
    keep = _kept_rows(rows, keys, ids, policy)
    dropped = 0
    if keep is not None:
        dropped = int(len(keep) - keep.sum())
        ids, years, matches, volumes = ids[keep], years[keep], matches[keep], volumes[keep]
        if len(ids) == 0:
            return run_schema(keep_years).empty_table(), dropped
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        keys = keys.take(pa.array(ids[starts]))
        ids = columnar.run_ids(starts, len(ids))
    if policy.lowercase:
        keys = pa.array([" ".join(fold_case(t) for t in k.split(" ")) for k in keys.to_pylist()], pa.string())
    columns = [
        keys,
        pa.array(columnar.sum_by_ngram(matches, starts, keys, "match_count")),
        pa.array(columnar.sum_by_ngram(volumes, starts, keys, "volume_count")),
        columnar.mask_array(columnar.year_masks(years, ids, len(starts))),
    ]
    if keep_years:
        # Each year's sum is part of its run's total, which fits: the series cannot overflow.
        columns.append(columnar.series_by_run(ids, years, matches, volumes, len(starts)))
    return pa.Table.from_arrays(columns, schema=run_schema(keep_years)), dropped
