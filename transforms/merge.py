"""Merge run tables: one row per n-gram, summed over every run of it.

A run table (transforms/collapse.py) may hold the same n-gram several times: a run
cut by a chunk boundary, case variants after --lowercase, or the same n-gram
in two files. ``merge_runs`` sums them into one row per n-gram, sorted by
n-gram, in vectorized code. ``LogStructuredMerge`` is a CombineFn that merges a
key's tables with O(log n) merges per row (the vocabulary's token tables).
"""

from typing import NoReturn

import apache_beam as beam
from apache_beam.metrics import Metrics
import pyarrow as pa

from ngramflow.transforms import columnar, native
from ngramflow.transforms.checked import CountOverflow, too_large


#: Beam metrics of the bytes one key's values reach, read back into the manifest (key_sizes): on Flink a
#: key's group is one Java List (batch) or one RocksDB value (checkpointed), which sizing.KEY_BUDGET bounds;
#: the bytes of every table a key received bound its group.
METRICS_NAMESPACE = "ngramflow"
#: The groups whose bytes are recorded, in the order benchmarks list them: the n-gram keys' inputs, the
#: n-gram ranges (transforms/total.py), the token keys' inputs and the vocabulary's parts (vocabulary.py).
GROUP_METRICS = ("ngram input bytes", "range bytes", "token input bytes", "vocabulary part bytes")


def record_bytes(name: str, nbytes: int) -> None:
    Metrics.distribution(METRICS_NAMESPACE, name).update(nbytes)


def key_sizes(result) -> dict:
    """{metric name: largest value} of the record_bytes distributions of a finished pipeline."""
    largest = {}
    for found in result.metrics().query()["distributions"]:
        value = found.committed or found.attempted
        if found.key.metric.namespace == METRICS_NAMESPACE and value:
            name = found.key.metric.name  # one distribution per step that records it: the largest of all
            largest[name] = max(largest.get(name, 0), value.max)
    return largest


def _concat(tables: list[pa.Table]) -> pa.Table:
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def merge_runs(runs: pa.Table) -> pa.Table:
    """One row per n-gram, sorted by n-gram (UTF-8 byte order), same schema.

    Google's 2012 files and 2020 shards are sorted, and so are their runs: a table of runs is sorted, or a
    few sorted pieces (of several files, or several run files' heads), which a stable sort that merges
    sorted runs puts in order (native.merge_order).
    The columns are then read where they lie, through that order: a sorted copy of the table (and of its
    year masks, then 88 bytes a row) was most of a spilling worker's peak (memray: 4 copies of its buffer).
    """
    if runs.num_rows == 0:
        return runs
    keys = columnar.whole(runs["ngram"])
    order, starts = native.merge_order(keys)
    if order is None and len(starts) == runs.num_rows:
        return runs.combine_chunks()
    keep_years = "year_series" in runs.column_names
    if keep_years and order is not None:  # the series are regrouped by consecutive rows (below)
        runs, keys, order = runs.take(order), keys.take(order), None
    merged = native.merge_groups(keys, columnar.numpy(runs["match"]), columnar.numpy(runs["volume"]), runs["years"],
                                 order, starts)
    if len(merged) == 2:
        overflowed(keys, order, starts, *merged)
    ngrams, matches, volumes, years = merged
    columns = [ngrams, pa.array(matches), pa.array(volumes), years]
    if keep_years:
        # Each year's sum is part of its n-gram's total, which fits: the series cannot overflow.
        ids = columnar.run_ids(starts, runs.num_rows)
        parent, years, matches, volumes = columnar.explode_series(keys, runs["year_series"])
        columns.append(columnar.series_by_run(ids[parent], years, matches, volumes, len(starts)))
    return pa.Table.from_arrays(columns, schema=runs.schema)


def overflowed(keys: pa.Array, order, starts, group: int, column: str) -> NoReturn:
    """CountOverflow for the sum of COLUMN ("match" or "volume") of the GROUPth group of merge_order's
    (ORDER, STARTS) over KEYS, named by its n-gram."""
    ngram = keys[int(native.first_rows(order, starts)[group])].as_py()
    raise CountOverflow(too_large(f"{column}_count of n-gram {ngram!r}"))


class _Stack(list):
    """A log-structured merge's accumulator: merged tables, largest first, and ``added``, the bytes of every
    table added to it (a key's group as the runner holds it when the values are grouped before combining)."""

    added = 0


class LogStructuredMerge(beam.CombineFn):
    """Tables of one key -> one merged table, through a log-structured merge.

    The accumulator is a stack of merged tables, each with more than twice the
    rows of the one above it: an added table is merged on its own and pushed,
    then the top two are merged while the upper one has at least half the rows
    of the lower. Every row is thus merged O(log n) times for n rows of a key,
    where compacting the whole accumulator per batch of added rows was
    quadratic; ``merge_accumulators`` pushes the other accumulators' tables the
    same way, so any order of calls costs the same. Subclasses name the merge
    of one table (``merge``) and the kind of key (``KIND``) for the metrics.
    """

    KIND: str
    merge: staticmethod  # one table -> its rows merged, sorted by key (merge_runs, merge_tokens)

    def create_accumulator(self):
        return _Stack()

    def _push(self, stack: _Stack, merged: pa.Table) -> _Stack:
        stack.append(merged)
        while len(stack) > 1 and 2 * stack[-1].num_rows >= stack[-2].num_rows:
            upper = stack.pop()
            stack[-1] = self.merge(pa.concat_tables([stack[-1], upper]))
        return stack

    def add_input(self, accumulator, table):
        accumulator.added += table.nbytes
        return self._push(accumulator, self.merge(table))

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        merged = next(accumulators, None) or _Stack()  # Beam lets the first accumulator be modified
        for accumulator in accumulators:
            merged.added += accumulator.added
            for table in accumulator:
                self._push(merged, table)
        return merged

    def extract_output(self, accumulator):
        merged = accumulator[0] if len(accumulator) == 1 else self.merge(_concat(accumulator))
        record_bytes(f"{self.KIND} input bytes", accumulator.added)
        record_bytes(f"{self.KIND} accumulator bytes", merged.nbytes)
        return merged
