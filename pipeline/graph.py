"""Assemble the import pipeline: the data's story from files to Parquet."""

import apache_beam as beam

import schemas
from pipeline.options import ImportOptions
from pipeline.output import OutputDir
from transforms.aggregate import AggregateNgrams, SummarizeOrders, ToNgramRows
from transforms.read import ReadNgramFiles, ReadSettings
from transforms.sinks import WriteJsonLines, WriteParquet
from transforms.vocabulary import BuildVocabulary

# Statistics the pipeline leaves under _work/ for the manifest.
FILE_STATS, ORDER_STATS = "files", "orders"


class ImportNgrams(beam.PTransform):
    """(path, size) of n-gram files -> n-gram rows, vocabulary rows, rejects and statistics."""

    def __init__(self, settings: ReadSettings, min_count: int):
        super().__init__()
        self.settings, self.min_count = settings, min_count

    def expand(self, files):
        parsed = files | "Read, parse and collapse each file" >> ReadNgramFiles(self.settings)
        totals = parsed.counts | "Total each n-gram across files" >> AggregateNgrams(self.min_count)
        ngrams = totals | "One row per n-gram" >> ToNgramRows()
        return {
            "ngrams": ngrams,
            "vocabulary": totals | "Build the vocabulary" >> BuildVocabulary(),
            "rejects": parsed.rejects,
            "file_stats": parsed.file_stats,
            "order_stats": ngrams | "Summarize each order" >> SummarizeOrders(),
        }


def build_import(pipeline: beam.Pipeline, opts: ImportOptions, files, out: OutputDir, progress_dir=None):
    """Add the whole import, from the file list to every output folder, to ``pipeline``."""
    results = (
        pipeline
        | "Input files" >> beam.Create(files)
        | "Import n-grams" >> ImportNgrams(opts.read_settings(progress_dir), opts.min_count)
    )
    by_order = results["ngrams"] | "Split by order" >> beam.Partition(
        lambda row, n: row["order"] - 1, schemas.MAX_ORDER)
    ngram_schema = schemas.ngrams_schema(opts.keep_years)
    for order, rows in enumerate(by_order, 1):
        rows | f"Write order-{order} n-grams" >> WriteParquet(out.ngrams(order), ngram_schema)
    results["vocabulary"] | "Write vocabulary" >> WriteParquet(out.join("vocabulary"), schemas.VOCABULARY)
    results["rejects"] | "Write rejects" >> WriteParquet(out.join("rejects"), schemas.REJECTS)
    results["file_stats"] | "Write file statistics" >> WriteJsonLines(out.join("_work", FILE_STATS))
    results["order_stats"] | "Write order statistics" >> WriteJsonLines(out.join("_work", ORDER_STATS))

