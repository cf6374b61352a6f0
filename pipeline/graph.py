"""Assemble the import pipeline: the data's story from files to Parquet."""

import apache_beam as beam

from ngramflow import schemas
from ngramflow.pipeline.mkn import build_mkn
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout
from ngramflow.transforms.read import ReadNgramFiles, ReadSettings, pack_files
from ngramflow.transforms.sinks import WriteRecords, WriteTables
from ngramflow.transforms.sizing import merge_shards, mkn_parts, shard_count, spill_bytes, work_unit_bytes
from ngramflow.transforms.total import SummarizeOrders, TotalNgrams, TotalNgramsOnDisk, files_by_order
from ngramflow.transforms.vocabulary import BuildVocabulary


def spills(opts: ImportOptions) -> bool:
    """Whether the import totals through sorted run files on disk (transforms/spill.py): on the embedded
    runner, whose shuffle is held in memory. Flink shuffles through its own disk-backed sort, and its
    TaskManagers need not share a file system for the run files, so it keeps the in-memory merge."""
    return opts.runner == "direct"


class ImportNgrams(beam.PTransform):
    """(path, size) of n-gram files -> (shard, n-gram table) pieces, each shard's in n-gram order; vocabulary
    and reject tables, and statistics. Spilling, the part files of each shard and order are written as the
    pieces come; otherwise they are named tables ("ngram_files") for WriteTables."""

    def __init__(self, settings: ReadSettings, min_count: int, shards: int, out: OutputDir, spill: bool):
        super().__init__()
        self.settings, self.min_count, self.shards, self.out, self.spill = settings, min_count, shards, out, spill

    def expand(self, files):
        parsed = files | "Read, parse and collapse each file" >> ReadNgramFiles(self.settings)
        schema = schemas.ngrams_schema(self.settings.keep_years)
        named = {}
        if self.spill:
            ngrams = parsed.runs | "Total each n-gram through sorted run files" >> TotalNgramsOnDisk(
                self.min_count, self.shards, self.out.join(layout.SPILL), spill_bytes(), self.out.path, schema)
        else:
            ngrams = parsed.runs | "Total each n-gram across files" >> TotalNgrams(self.min_count, self.shards)
            named["ngram_files"] = ngrams | "Split each shard by order" >> beam.FlatMapTuple(files_by_order)
        return named | {
            "ngrams": ngrams,
            "vocabulary": ngrams | "Build the vocabulary" >> BuildVocabulary(self.shards),
            "rejects": parsed.rejects,
            "file_stats": parsed.file_stats,
            "order_stats": ngrams | "Summarize each order" >> SummarizeOrders(),
        }


def build_import(pipeline: beam.Pipeline, opts: ImportOptions, files, out: OutputDir, progress_dir=None):
    """Add the whole import, from the file list to every output file, to ``pipeline``."""
    input_bytes = sum(size for _, size in files)
    # The in-memory merge (Flink) bounds each key's group: its shard count follows the input (sizing.py).
    shards = shard_count(input_bytes) if spills(opts) else merge_shards(input_bytes)
    settings = opts.read_settings(progress_dir)
    results = (
        pipeline
        | "Input files" >> beam.Create(pack_files(files, work_unit_bytes(input_bytes), settings.slice_bytes))
        | "Import n-grams" >> ImportNgrams(settings, opts.min_count, shards, out, spills(opts))
    )
    if "ngram_files" in results:
        results["ngram_files"] | "Write n-grams" >> WriteTables(out.path, schemas.ngrams_schema(opts.keep_years))
    results["vocabulary"] | "Write vocabulary" >> WriteTables(out.join(layout.VOCABULARY), schemas.VOCABULARY)
    results["rejects"] | "Write rejects" >> WriteTables(out.join(layout.REJECTS), schemas.REJECTS)
    results["file_stats"] | "Write file statistics" >> WriteRecords(out.join(layout.FILE_STATS))
    results["order_stats"] | "Write order statistics" >> WriteRecords(out.join(layout.ORDER_STATS))
    if opts.mkn:
        build_mkn(results["ngrams"] | "N-gram tables" >> beam.Values(), out, opts.mkn, mkn_parts(input_bytes))


def aggregation(opts: ImportOptions, out: OutputDir) -> dict:
    """How the run totalled its n-grams, for the manifest and the summary (after the pipeline ran)."""
    if not spills(opts):
        return {"method": "in-memory merge of run tables shuffled by shard"}
    run_files = OutputDir(out.join(layout.SPILL)).files()
    return {"method": "sorted runs spilled to disk", "scratch": out.join(layout.SPILL),
            "run_files": len(run_files), "spilled_bytes": sum(run_files.values())}
