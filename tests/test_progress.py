"""The progress line, fed by the real read stage's progress files."""

import io
import os
import time

import apache_beam as beam
import pytest

from conftest import SAMPLE, gz_files
from ngramflow.pipeline.progress import ProgressReporter
from ngramflow import schemas
from ngramflow.transforms import read, spill
from ngramflow.transforms.lines import ReadSettings
from ngramflow.transforms.units import pack_files


def test_progress_counts_every_file_and_row(tmp_path):
    files = [(f, os.path.getsize(f)) for f in gz_files(os.path.join(SAMPLE, "2012"))]
    with beam.Pipeline() as p:
        _ = (p | beam.Create(pack_files(files, 1 << 30))
               | read.ReadNgramFiles(ReadSettings(progress_dir=str(tmp_path))))
    stream = io.StringIO()
    reporter = ProgressReporter(str(tmp_path), len(files), sum(s for _, s in files), stream=stream, interval=0.01)
    snapshot = reporter.snapshot()
    assert snapshot["files_done"] == len(files)
    assert snapshot["rows"] == 60_010  # rows of the bundled 2012 sample
    assert snapshot["bytes"] == sum(s for _, s in files)
    reporter.start()
    time.sleep(0.2)
    reporter.stop()
    assert f"files {len(files)}/{len(files)} · 60.0k rows" in stream.getvalue()


@pytest.mark.parametrize("threads", [False, True], ids=["ranges-spread-over-workers", "ranges-merged-by-threads"])
def test_progress_counts_the_ngram_ranges_written(tmp_path, threads):
    files = [(f, os.path.getsize(f)) for f in gz_files(os.path.join(SAMPLE, "2012"))]
    progress, out = tmp_path / "progress", tmp_path / "out"
    progress.mkdir()
    with beam.Pipeline() as p:
        runs = (p | beam.Create(pack_files(files, 1 << 30))
                | read.ReadNgramFiles(ReadSettings(progress_dir=str(progress)))).runs
        _ = runs | spill.TotalNgramsOnDisk(1, str(tmp_path / "scratch"), 16 << 10, 500, str(out),
                                           schemas.ngrams_schema(False), str(progress), workers=2, threads=threads)
    parts = {os.path.basename(f) for _, _, names in os.walk(out) for f in names}
    reporter = ProgressReporter(str(progress), len(files), sum(s for _, s in files))
    snapshot = reporter.snapshot()
    assert snapshot["ranges_done"] == snapshot["ranges"] == len(parts) > 3  # one part name per range
    assert reporter.line().endswith(f"n-gram ranges written {len(parts)}/{len(parts)}")
