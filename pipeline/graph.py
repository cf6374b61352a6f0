"""Assemble the import pipeline: the data's story from files to Parquet."""

import os

import apache_beam as beam

from ngramflow import schemas
from ngramflow.corpus.catalog import is_export_file
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout
from ngramflow.transforms.density import input_density
from ngramflow.transforms.lines import ReadSettings
from ngramflow.transforms.read import ReadNgramFiles
from ngramflow.transforms.sinks import WriteRecords, WriteTables
from ngramflow.transforms.sizing import (SORTED_INPUT_FILE_BYTES, SPILL_COMPRESSION, merge_shards, range_rows,
                                         spill_budget, spill_compression, token_range_rows)
from ngramflow.transforms.sorted_input import KEY_SPANS, SPANS, ReadSortedFiles, WriteSortedInput
from ngramflow.transforms.spill import ORDER_TOTALS, TOKEN_RUNS, TotalNgramsOnDisk, gathered_to_one
from ngramflow.transforms.total import (SumOrderTotals, SummarizeOrders, TotalNgramRanges, files_by_order,
                                        range_records)
from ngramflow.transforms.units import work_units
from ngramflow.transforms.vocabulary import BuildVocabulary
from ngramflow.transforms.vocabulary_sort import NumberVocabularyOnDisk


def spills(opts: ImportOptions) -> bool:
    """Whether the import totals through sorted run files (transforms/spill.py), in the build folder of
    the output (local, a shared file system, gs:// or s3://): on the embedded runner, whose shuffle is
    held in memory, and on Flink in batch mode, whose portable runner runs a worker's whole share of the
    input as one bundle and takes its output tables faster than its sort spills them (measured: the
    TaskManager's heap ran out at 16M distinct n-grams). Checkpointed mode keeps its counts in keyed
    state: a checkpoint must hold them, and run files written between checkpoints would not be."""
    return opts.runner == "direct" or not opts.flink.checkpointed


def in_input_order(opts: ImportOptions) -> bool:
    """Whether the import totals its n-grams in the input's own order (transforms/sorted_input.py); input
    that turns out not to be in order is imported again through run files (pipeline/run.py)."""
    return opts.merge == "input-order"


def default_merge(opts: ImportOptions, files) -> str:
    """What --merge auto means for FILES, (path, size) pairs (options.py says): input order for Google's own
    files, which its exports promise sorted, when they are large enough to gain from it (sizing.py)."""
    sizes = [size for _, size in files]
    large = bool(sizes) and sum(sizes) / len(sizes) >= SORTED_INPUT_FILE_BYTES
    google = all(is_export_file(path) for path, _ in files)
    return "input-order" if opts.runner == "direct" and not opts.lowercase and large and google else "runs"


class ImportNgrams(beam.PTransform):
    """(path, size) of n-gram files -> the data's outputs: named tables to write ("ngram_files",
    "vocabulary"; on the spill path the n-gram and vocabulary files are written as they come), the
    records of the part files' n-gram ranges ("ranges"; in the input's order, "pieces" and "key_spans",
    sorted_input.py), reject tables, and statistics."""

    def __init__(self, settings: ReadSettings, min_count: int, shards: int | None, out: OutputDir,
                 spill_budget: int | None, workers: int = 1, input_order: bool = False,
                 spill_compression: str | None = SPILL_COMPRESSION, threads: bool = False):
        """``spill_budget``: the bytes of run tables each worker holds on the spill path; None: the counts
        are totalled in keyed state (``shards``: its keys). ``workers``: how many run in parallel.
        ``input_order``: total in the input's own order (in_input_order), within ``spill_budget``.
        ``spill_compression``: that of the spill path's run files (sizing.spill_compression). ``threads``: the
        workers are threads of one process (the embedded runner's), which take the vocabulary's external sort
        in one step (vocabulary_sort.number_vocabulary)."""
        super().__init__()
        self.settings, self.min_count, self.shards, self.out = settings, min_count, shards, out
        self.spill_budget, self.workers, self.input_order = spill_budget, workers, input_order
        self.spill_compression, self.threads = spill_compression, threads

    def _vocabulary(self, token_runs):
        scratch, budget = self.out.join(layout.SPILL), self.spill_budget
        return token_runs | "Build the vocabulary by an external sort" >> NumberVocabularyOnDisk(
            scratch, budget, self.out.join(layout.VOCABULARY), token_range_rows(), self.workers, self.threads)

    def expand(self, files):
        if self.input_order:
            written = files | "Read and write each file in its own order" >> WriteSortedInput(ReadSortedFiles(
                self.settings, self.min_count, self.out.join(layout.SPILL), self.spill_budget, self.out.path,
                schemas.ngrams_schema(self.settings.keep_years), range_rows()))
            self._vocabulary(gathered_to_one(written[TOKEN_RUNS], "token run files"))
            return {"rejects": written.rejects, "file_stats": written.file_stats, "pieces": written.pieces,
                    "key_spans": written[KEY_SPANS],
                    "order_stats": written[ORDER_TOTALS] | "Sum each order" >> SumOrderTotals()}
        parsed = files | "Read, parse and collapse each file" >> ReadNgramFiles(self.settings)
        common = {"rejects": parsed.rejects, "file_stats": parsed.file_stats}
        if self.spill_budget:
            totals = parsed.runs | "Total each n-gram through sorted run files" >> TotalNgramsOnDisk(
                self.min_count, self.out.join(layout.SPILL), self.spill_budget, range_rows(), self.out.path,
                schemas.ngrams_schema(self.settings.keep_years), self.settings.progress_dir, self.workers,
                self.spill_compression, self.threads)
            self._vocabulary(totals["token_runs"])
            return common | {
                "ranges": totals["parts"],
                "order_stats": totals["order_totals"] | "Sum each order" >> SumOrderTotals(),
            }
        ranges = parsed.runs | "Total each n-gram range" >> TotalNgramRanges(self.min_count, self.shards)
        return common | {
            "ngram_files": ranges | "Split each range by order" >> beam.FlatMapTuple(files_by_order),
            "ranges": ranges | "Record each range" >> beam.FlatMapTuple(range_records),
            "vocabulary": ranges | "Build the vocabulary" >> BuildVocabulary(self.shards),
            "order_stats": ranges | "Summarize each order" >> SummarizeOrders(),
        }


def range_name(part: dict) -> str:
    return f"order-{part['order']}-{os.path.basename(part['file']).removesuffix('.parquet')}"


def build_import(pipeline: beam.Pipeline, opts: ImportOptions, files, out: OutputDir, progress_dir=None,
                 expansion_service: str | None = None) -> dict:
    """Add the whole import, from the file list (or the queue of --from-kafka, expanded by
    ``expansion_service``) to every output file, to ``pipeline``; the MKN stage is a pipeline of its own,
    after this one (pipeline/run.py). Returns the plan of the merge in keyed state, for the manifest (empty
    on the spill path, whose ranges follow the data it spilled)."""
    settings, spill = opts.read_settings(progress_dir), spills(opts)
    if opts.from_kafka:
        from ngramflow.corpus.queue import QueueAddress
        from ngramflow.pipeline.kafka.read import ReadQueue

        # The files are not known yet: the keys follow the size the user expects (their density unmeasured).
        input_bytes = opts.queue_bytes()
        plan = {"keys": merge_shards(input_bytes, None), "table_bytes_per_input_byte": None}
        units = pipeline | "Input files from the queue" >> ReadQueue(
            QueueAddress.parse(opts.from_kafka, "--from-kafka"), expansion_service, settings.slice_bytes, out.path)
    else:
        input_bytes = sum(size for _, size in files)
        plan = {}
        if not spill:
            # The merge in keyed state (Flink, checkpointed) bounds each key's group: its key count follows
            # the input's size and its measured density (sizing.merge_shards, transforms/density.py).
            density = input_density(files, settings)
            plan = {"keys": merge_shards(input_bytes, density), "table_bytes_per_input_byte": density}
        # Without Create's own reshuffle (a stage of its own): ReadNgramFiles spreads the units over the workers.
        units = pipeline | "Input files" >> beam.Create(work_units(files, settings.slice_bytes), reshuffle=False)
    # The embedded runner's workers are threads of one process (pipeline/run.py), which share its budget.
    budget = spill_budget(opts.workers if opts.runner == "direct" else 1) if spill else None
    compression = SPILL_COMPRESSION
    if spill and not in_input_order(opts):
        # The embedded runner's run files stay on this machine; a Flink cluster's are read by its other nodes.
        compression = spill_compression(input_bytes, out.join(layout.SPILL), shared=opts.runner != "direct")
        plan["run_compression"] = compression or "none"
    results = units | "Import n-grams" >> ImportNgrams(settings, opts.min_count, plan.get("keys"), out, budget,
                                                        opts.workers or 1, in_input_order(opts), compression,
                                                        threads=opts.runner == "direct")
    if "ngram_files" in results:
        results["ngram_files"] | "Write n-grams" >> WriteTables(out.path, schemas.ngrams_schema(opts.keep_years))
        results["vocabulary"] | "Write vocabulary" >> WriteTables(out.join(layout.VOCABULARY), schemas.VOCABULARY)
    if "pieces" in results:  # named in n-gram order after the run (sorted_input.lay_out_parts)
        (results["pieces"]
         | "Name each piece" >> beam.Map(lambda part: (range_name(part), part))
         | "Write piece records" >> WriteRecords(out.join(layout.PIECES)))
        results["key_spans"] | "Write the files' spans" >> WriteTables(out.join(layout.KEY_SPANS), SPANS)
    else:
        (results["ranges"]
         | "Name each range" >> beam.Map(lambda part: (range_name(part), part))
         | "Write part-file ranges" >> WriteRecords(out.join(layout.RANGES)))
    results["rejects"] | "Write rejects" >> WriteTables(out.join(layout.REJECTS), schemas.REJECTS)
    results["file_stats"] | "Write file statistics" >> WriteRecords(out.join(layout.FILE_STATS))
    if opts.events:
        from ngramflow.pipeline.kafka.events import PublishRunEvents

        results["file_stats"] | "Publish run events" >> PublishRunEvents(opts.events, settings.slice_bytes)
    results["order_stats"] | "Write order statistics" >> WriteRecords(out.join(layout.ORDER_STATS))
    return plan


def aggregation(opts: ImportOptions, out: OutputDir, plan: dict) -> dict:
    """How the run totalled its n-grams, for the manifest and the summary (after the pipeline ran);
    ``plan`` is what build_import returned, and for an import in the input's order the count of its part files."""
    if in_input_order(opts):
        return {"method": "each file totalled in its own order (sorted by n-gram, no n-gram in two files), its "
                          "part files written as it was read", **plan}
    if not spills(opts):
        return {"method": "run tables in keyed state, cut into n-gram ranges by a sample sort, each range "
                          "merged", **plan}
    run_files = OutputDir(out.join(layout.SPILL)).files()
    return {"method": "sorted runs spilled to disk", "scratch": out.join(layout.SPILL),
            "run_files": len(run_files), "spilled_bytes": sum(run_files.values()), **plan}
