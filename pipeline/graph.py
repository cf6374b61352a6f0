"""Assemble the import pipeline: the data's story from files to Parquet."""

import apache_beam as beam

from ngramflow import schemas
from ngramflow.pipeline.mkn import build_mkn
from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout
from ngramflow.transforms.read import ReadNgramFiles, ReadSettings, pack_files
from ngramflow.transforms.sinks import WriteRecords, WriteTables
from ngramflow.transforms.sizing import mkn_parts, shard_count, work_unit_bytes
from ngramflow.transforms.total import SummarizeOrders, TotalNgrams, files_by_order
from ngramflow.transforms.vocabulary import BuildVocabulary


class ImportNgrams(beam.PTransform):
    """(path, size) of n-gram files -> named n-gram, vocabulary and reject tables, and statistics."""

    def __init__(self, settings: ReadSettings, min_count: int, shards: int):
        super().__init__()
        self.settings, self.min_count, self.shards = settings, min_count, shards

    def expand(self, files):
        parsed = files | "Read, parse and collapse each file" >> ReadNgramFiles(self.settings)
        ngrams = parsed.runs | "Total each n-gram across files" >> TotalNgrams(self.min_count, self.shards)
        return {
            "ngrams": ngrams | "Split each shard by order" >> beam.FlatMapTuple(files_by_order),
            "vocabulary": ngrams | "Build the vocabulary" >> BuildVocabulary(self.shards),
            "rejects": parsed.rejects,
            "file_stats": parsed.file_stats,
            "order_stats": ngrams | "Summarize each order" >> SummarizeOrders(),
        }


def build_import(pipeline: beam.Pipeline, opts: ImportOptions, files, out: OutputDir, progress_dir=None):
    """Add the whole import, from the file list to every output file, to ``pipeline``."""
    input_bytes = sum(size for _, size in files)
    shards = shard_count(input_bytes)
    settings = opts.read_settings(progress_dir)
    results = (
        pipeline
        | "Input files" >> beam.Create(pack_files(files, work_unit_bytes(input_bytes), settings.slice_bytes))
        | "Import n-grams" >> ImportNgrams(settings, opts.min_count, shards)
    )
    results["ngrams"] | "Write n-grams" >> WriteTables(out.path, schemas.ngrams_schema(opts.keep_years))
    results["vocabulary"] | "Write vocabulary" >> WriteTables(out.join(layout.VOCABULARY), schemas.VOCABULARY)
    results["rejects"] | "Write rejects" >> WriteTables(out.join(layout.REJECTS), schemas.REJECTS)
    results["file_stats"] | "Write file statistics" >> WriteRecords(out.join(layout.FILE_STATS))
    results["order_stats"] | "Write order statistics" >> WriteRecords(out.join(layout.ORDER_STATS))
    if opts.mkn:
        build_mkn(results["ngrams"] | "N-gram tables" >> beam.Values(), out, opts.mkn, mkn_parts(input_bytes))
