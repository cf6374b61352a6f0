"""Total n-grams through sorted run files on disk, into range-partitioned part files: the aggregation
whose memory does not grow with the input (the embedded runner's).

Beam's embedded runner holds every collection that crosses a stage in memory, so
neither run tables nor n-gram tables cross one; only references to run files and
small records do (transforms/runfiles.py):

    SpillRuns      run tables -> run files: each worker buffers run tables up to the budget,
                   merges the buffer (merge_runs: one row per n-gram, sorted) and writes it,
                   beside its reading while an idle worker's budget is spare (embedded)
    plan_ranges    every run file's batch bounds -> key ranges of about RANGE_ROWS run rows
                   each: the part files follow the data, however many distinct n-grams
    MergeRange     one range and the run files overlapping it -> a streaming k-way merge of
                   the range's rows, written as the range's part file of each order (sorted,
                   so each part file is one contiguous n-gram range); outputs the range's
                   record (first and last n-gram of each part file), its per-order totals, and
                   its tokens as token run files for the vocabulary (transforms/vocabulary_sort.py);
                   on the embedded runner MergeRanges takes every range, by threads of its process
"""

import functools
import math
import threading
import uuid
import weakref
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.pools import named_pool
from ngramflow.transforms.read import report_range_done
from ngramflow.transforms.runfiles import RunFile, RunSpiller, SpareBudgets, make_folder, merged
from ngramflow.transforms.sinks import StreamedTables
from ngramflow.transforms.sizing import LAST_FLUSH_PARTS, SPILL_COMPRESSION, release_freed_memory
from ngramflow.transforms.total import ngram_tables, order_totals, part_name
from ngramflow.transforms.vocabulary import TokenRuns

#: Tagged outputs of MergeRange besides the part-file records.
ORDER_TOTALS, TOKEN_RUNS = "order_totals", "token_runs"


class SpillRuns(beam.DoFn):
    """Run tables -> RunFile of their merged rows, holding at most about ``budget`` bytes of run tables, written
    with ``compression`` (sizing.spill_compression). ``lend_among``: the workers are that many threads of one
    process (the embedded runner's), and a worker's full buffer is spilled beside its reading while another's
    budget is spare (runfiles.SpareBudgets); 0: each worker spills its own (Flink's, each its own process)."""

    def __init__(self, folder: str, budget: int, compression: str | None, lend_among: int = 0):
        self.folder, self.budget, self.compression, self.lend_among = folder, budget, compression, lend_among
        self.budgets_name = uuid.uuid4().hex  # of the one SpareBudgets of this step's instances (spare_budgets)

    def setup(self):
        make_folder(self.folder)
        self.spare = spare_budgets(self.budgets_name, self.lend_among) if self.lend_among > 1 else None

    def start_bundle(self):
        self.spiller = RunSpiller(self.folder, "runs", merge_runs, self.budget, self.compression, self.spare)
        if self.spare:
            self.spare.hold()

    def process(self, runs: pa.Table):
        yield from self.spiller.add(runs)

    def finish_bundle(self):
        try:
            # Threads of one process: the workers whose budgets are spare are idle (Flink's, processes, may not be).
            runs = self.spiller.flush(LAST_FLUSH_PARTS if self.spare else 1)
        finally:
            if self.spare:
                self.spare.give()
        for run in runs:
            yield WindowedValue(run, MIN_TIMESTAMP, [GlobalWindow()])


#: The SpareBudgets of each SpillRuns step, by its name, shared by its instances (a worker thread's each): made
#: by the first of them, gone with the last.
_SPARE_BUDGETS, _MAKING_SPARE_BUDGETS = weakref.WeakValueDictionary(), threading.Lock()


def spare_budgets(name: str, workers: int) -> SpareBudgets:
    with _MAKING_SPARE_BUDGETS:
        budgets = _SPARE_BUDGETS.get(name)
        if budgets is None:
            budgets = _SPARE_BUDGETS[name] = SpareBudgets(workers)
        return budgets


class Range(NamedTuple):
    """One n-gram range [lo, hi) of the plan (None: unbounded), the run files that overlap it, and
    its place among the plan's COUNT ranges."""

    index: int
    count: int
    lo: str | None
    hi: str | None
    runs: list[RunFile]


def plan_ranges(runs: list[RunFile], range_rows: int, workers: int = 1, at_least: int = 1) -> list[Range]:
    """Consecutive key ranges that cover every key, each holding about RANGE_ROWS of the runs' rows, and
    AT_LEAST of them where the batches allow. When there is more than one, their number is rounded up to a
    multiple of WORKERS, so that each worker merges a like share (5 ranges on 2 workers left the last range's
    second or so to one core).

    The cuts are batch bounds, half of each batch's rows counted at its first key and half at its last: a
    cut falls within the batches of other files, whose rows it splits, about half on each side (counted all
    at its first key, a batch's rows were all before a cut that split it: a plan's first range held a fifth
    fewer rows than the others, and its last a fifth more, at 80M rows in 6-18 run files).
    """
    marks = sorted(mark for run in runs for first, last, rows in run.batches
                   for mark in ((first, rows - rows // 2), (last, rows // 2)))
    total = sum(rows for _, rows in marks)
    ranges = max(at_least, math.ceil(total / range_rows))
    if ranges > 1:
        ranges = -(-ranges // workers) * workers
    cuts, seen = [], 0
    for key, rows in marks:
        if seen >= (len(cuts) + 1) * total / ranges and (not cuts or key > cuts[-1]):
            cuts.append(key)
        seen += rows
    bounds = [None, *cuts, None]
    return [Range(index, len(cuts) + 1, lo, hi, [run for run in runs if run.overlaps(lo, hi)])
            for index, (lo, hi) in enumerate(zip(bounds, bounds[1:]))]


def merge_range(planned: Range, min_count: int, folder: str, budget: int, root: str, schema: pa.Schema,
                compression: str | None, tokens: TokenRuns) -> tuple[list[dict], dict[int, tuple], list[RunFile]]:
    """One range -> its part file of each order, written under ROOT in SCHEMA, within BUDGET; returns
    ({"order", "file", "first", "last"} per part file, {order: (n-grams, matches, volumes)}, the RunFiles
    that TOKENS, a token_spiller the caller flushes, spilled while it took the range's tokens)."""
    index, _, lo, hi, runs = planned
    totals, parts, token_runs = {}, {}, []
    with StreamedTables(root, schema) as files:
        last = functools.partial(ngram_tables, min_count=min_count)
        for tables in merged(folder, "pass", runs, merge_runs, budget // 2, lo, hi, compression, last=last):
            if not tables:
                continue
            for rows in tables:
                ((order, counts),) = order_totals(rows)
                name = part_name(order, index)
                files.write(name, rows)
                totals[order] = tuple(a + b for a, b in zip(totals.get(order, (0, 0, 0)), counts))
                part = parts.setdefault(order, {"order": order, "file": f"{name}.parquet",
                                                "first": rows["ngram"][0].as_py()})
                part["last"] = rows["ngram"][-1].as_py()
            token_runs += tokens.add(tables, files.path(part_name(1, index)))
    return list(parts.values()), totals, token_runs


def token_spiller(folder: str, budget: int) -> TokenRuns:
    """The token runs of a range's merge within its BUDGET: half of it, since the merge's batches and the
    range's tokens are held at once."""
    return TokenRuns(folder, budget // 2)


class MergeRange(beam.DoFn):
    """Range -> the range's part file of each order (merge_range); outputs {"order", "file", "first", "last"}
    per part file, and tagged (order, (n-grams, matches, volumes)) per order and the RunFiles of the range's
    tokens. A range done is reported in ``progress_dir`` (pipeline/progress.py), when there is one."""

    def __init__(self, min_count: int, folder: str, budget: int, root: str, schema: pa.Schema,
                 progress_dir: str | None, compression: str | None):
        self.min_count, self.folder, self.budget, self.root, self.schema = min_count, folder, budget, root, schema
        self.progress_dir, self.compression = progress_dir, compression

    def merge(self, planned: Range, tokens: TokenRuns):
        return merge_range(planned, self.min_count, self.folder, self.budget, self.root, self.schema,
                           self.compression, tokens)

    @staticmethod
    def outputs(merged_range) -> list:
        """What a range's merge outputs, but for its token runs."""
        parts, totals, _ = merged_range
        return [beam.pvalue.TaggedOutput(ORDER_TOTALS, total) for total in totals.items()] + parts

    def report_done(self, planned: Range) -> None:
        if self.progress_dir:
            report_range_done(self.progress_dir, planned.index, planned.count)

    def process(self, planned: Range):
        tokens = token_spiller(self.folder, self.budget)  # the range's own
        merged_range = self.merge(planned, tokens)
        yield from (beam.pvalue.TaggedOutput(TOKEN_RUNS, run) for run in merged_range[2] + tokens.flush())
        self.report_done(planned)
        yield from self.outputs(merged_range)


class MergeRanges(MergeRange):
    """[RunFiles] (one list) -> MergeRange's outputs of every range of their plan, the token runs as one tagged
    list, the ranges merged by ``workers`` threads of this process (the embedded runner's way: its workers are
    threads of one process, and spreading the ranges over them cost the graph a step of its own and the run a
    stage)."""

    def __init__(self, *args, range_rows: int, workers: int):
        super().__init__(*args)
        self.range_rows, self.workers = range_rows, workers

    def process(self, runs: list[RunFile]):
        release_freed_memory()
        planned = plan_ranges(runs, self.range_rows, self.workers)
        unmerged, taking, failed = iter(planned), threading.Lock(), threading.Event()
        merging = self.workers  # the threads still merging (under TAKING)

        def merge_ranges() -> tuple[list, list[RunFile]]:
            """(range, merged range) of each range this thread takes, in turn while any is left, and its token
            runs. A token spiller a thread, for all of the ranges it merges: each range's own gave again every
            token it had, the tokens of the range before among them (tokens repeat across n-gram ranges: all
            but the first of an n-gram's are anywhere), and the vocabulary merged them all again. It is flushed
            as its thread runs out of ranges, while the others merge their last: flushed after all of them, the
            spillers' merges kept one core busy and the other idle (8 unsorted files, 80M rows: 0.07 s). The last
            thread's, which the stage's end waits for, in LAST_FLUSH_PARTS at once."""
            nonlocal merging
            tokens, taken = token_spiller(self.folder, self.budget), []
            while not failed.is_set():  # a range failed: the import ends with its error, the others unmerged
                with taking:
                    each = next(unmerged, None)
                    if each is None:
                        merging -= 1
                        parts = 1 if merging else LAST_FLUSH_PARTS
                if each is None:
                    return taken, tokens.flush(parts)
                try:
                    taken.append((each, self.merge(each, tokens)))
                except BaseException:
                    failed.set()
                    raise
                self.report_done(each)
            return taken, []

        with named_pool(self.workers, "merge") as pool:
            threads = [pool.submit(merge_ranges) for _ in range(self.workers)]
            done = [thread.result() for thread in threads]
        token_runs = [run for _, flushed in done for run in flushed]
        for _, merged_range in sorted((pair for taken, _ in done for pair in taken), key=lambda pair: pair[0].index):
            token_runs += merged_range[2]
            yield from self.outputs(merged_range)
        yield beam.pvalue.TaggedOutput(TOKEN_RUNS, token_runs)


#: Each pipeline's one keyed None, which gathered_to_one adds to every collection it gathers.
_NOTHING = weakref.WeakKeyDictionary()


def _nothing(pipeline: beam.Pipeline):
    """The pipeline's keyed None, made once: each Create is a stage of its own on the embedded runner,
    which runs every stage at some 20-30 ms of its own."""
    if pipeline not in _NOTHING:
        _NOTHING[pipeline] = pipeline | "Nothing to gather" >> beam.Create([(None, None)])
    return _NOTHING[pipeline]


def gathered_to_one(pcoll, label: str):
    """All elements of PCOLL as one list, even when there are none (the embedded runner gathers small
    records only: references and bounds)."""
    return (
        (pcoll | f"Key {label}" >> beam.Map(lambda element: (None, element)), _nothing(pcoll.pipeline))
        | f"All {label}" >> beam.Flatten()
        | f"Gather {label}" >> beam.GroupByKey()
        | f"List {label}" >> beam.MapTuple(lambda _, elements: [e for e in elements if e is not None])
    )


class TotalNgramsOnDisk(beam.PTransform):
    """Run tables -> the n-gram part files of every order under ``root``, one contiguous sorted n-gram
    range each; outputs {"parts": part-file records, "order_totals": (order, totals), "token_runs":
    lists of token RunFiles}.

    Only RunFiles, ranges and small records cross the embedded runner's stages;
    ``budget`` bounds the bytes of tables a worker holds (transforms/runfiles.py), and ``compression`` is that of
    the run files (sizing.spill_compression).
    """

    def __init__(self, min_count: int, folder: str, budget: int, range_rows: int, root: str, schema: pa.Schema,
                 progress_dir: str | None = None, workers: int = 1, compression: str | None = SPILL_COMPRESSION,
                 threads: bool = False):
        """``threads``: the workers are threads of one process (the embedded runner's): the ranges are merged
        by MergeRanges, else spread over the runner's workers (Flink's, which may be other machines)."""
        super().__init__()
        self.min_count, self.folder, self.budget, self.range_rows = min_count, folder, budget, range_rows
        self.root, self.schema, self.progress_dir, self.workers = root, schema, progress_dir, workers
        self.compression, self.threads = compression, threads

    def expand(self, runs):
        range_rows, workers = self.range_rows, self.workers
        merge = (self.min_count, self.folder, self.budget, self.root, self.schema, self.progress_dir, self.compression)
        run_files = gathered_to_one(runs | "Spill sorted runs" >> beam.ParDo(
            SpillRuns(self.folder, self.budget, self.compression, workers if self.threads else 0)), "run files")
        if self.threads:
            merged_ranges = run_files | "Merge the ranges into their part files" >> beam.ParDo(
                MergeRanges(*merge, range_rows=range_rows, workers=workers)).with_outputs(
                ORDER_TOTALS, TOKEN_RUNS, main="parts")
            token_runs = merged_ranges[TOKEN_RUNS]
        else:
            merged_ranges = (
                run_files
                | "Plan n-gram ranges" >> beam.FlatMap(lambda files: plan_ranges(files, range_rows, workers))
                | "Spread the ranges over workers" >> beam.Reshuffle()
                | "Merge each range into its part files" >> beam.ParDo(MergeRange(*merge)).with_outputs(
                    ORDER_TOTALS, TOKEN_RUNS, main="parts")
            )
            token_runs = gathered_to_one(merged_ranges[TOKEN_RUNS], "token run files")
        return {"parts": merged_ranges.parts, "order_totals": merged_ranges[ORDER_TOTALS], "token_runs": token_runs}


def range_index(parts: list[dict]) -> dict[str, list]:
    """The manifest's "ranges": per order, [file, first n-gram, last n-gram] of each part file, in
    n-gram order (query/ finds the one file that can hold an n-gram)."""
    index = {}
    for part in sorted(parts, key=lambda p: (p["order"], p["first"])):
        index.setdefault(str(part["order"]), []).append([part["file"], part["first"], part["last"]])
    return index
