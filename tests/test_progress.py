"""The progress line, fed by the real read stage's progress files."""

import io
import os
import time

import apache_beam as beam

from conftest import SAMPLE, gz_files
from ngramflow.pipeline.progress import ProgressReporter
from ngramflow.transforms import read


def test_progress_counts_every_file_and_row(tmp_path):
    files = [(f, os.path.getsize(f)) for f in gz_files(os.path.join(SAMPLE, "2012"))]
    with beam.Pipeline() as p:
        _ = (p | beam.Create(read.pack_files(files, 1 << 30))
               | read.ReadNgramFiles(read.ReadSettings(progress_dir=str(tmp_path))))
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
