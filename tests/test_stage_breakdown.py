"""The per-stage breakdown of `make bench` (benchmarks/stages.py) charges py-spy's samples as it says; the
bundles' waits for their state samplers (benchmarks/bundle_ends.py) and the start (benchmarks/start.py) are
timed."""

import os
import re

import pytest
from apache_beam.runners.worker import statesampler
from apache_beam.transforms import core, userstate

from benchmarks import bundle_ends, stages, start
from conftest import SAMPLE

MAIN = 'process 1:"python -m ngramflow.cli import"'
WORKER = 'process 2:"python -m apache_beam.runners.worker.sdk_worker_main"'


def _sample(*frames: str, count: int = 1) -> str:
    return ";".join(f"{f} (x.py:1)" if not f.startswith("process ") else f for f in frames) + f" {count}"


def test_samples_go_to_the_deepest_stage_and_waits_are_left_out():
    raw = "\n".join([
        _sample(MAIN, "main", "ReadNgramFile.process", "collapse_chunk", count=5),
        _sample(MAIN, "main", "ReadNgramFile.process", "LineReader.lines_before", "LineReader._fill", "LineReader.decompress_into",
                count=2),
        _sample(MAIN, "main", "ReadNgramFile.process", "LineReader.lines_before", count=1),
        _sample(MAIN, "main", "MergeRange.process", "StreamedTables.write", "ParquetWriter.write_table", count=3),
        _sample(MAIN, "main", "MergeRange.process", "distinct_tokens", "merge_tokens", count=4),
        _sample(MAIN, "main", "MergeRange.process", "merged", "_merge_files", count=6),
        _sample(MAIN, "Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run", count=50),  # native only
        _sample(MAIN, "Thread.run", "_run_channel_spin_thread.<locals>.channel_spin", count=40),  # gRPC polling
        _sample(MAIN, "main", "Queue.get", "Condition.wait", count=30),
        _sample(MAIN, "Thread.run", "_worker", count=20),  # a pool's thread waiting for work
        _sample(MAIN, "Thread.run", "_worker", "_WorkItem.run", "collapse_chunk", count=3),  # and one at work
        _sample(MAIN, WORKER, "main", "_find_and_load", "exec_module", count=7),
        _sample(MAIN, WORKER, "main", "process_bundle", "decode", count=8),
        _sample(MAIN, "Thread.run", "SdkWorker.process_bundle", "decode", count=2),  # a worker thread
        _sample(MAIN, "main", "Pipeline.run", "to_runner_api", count=9),
    ])
    assert stages.breakdown(raw) == {
        "parse and collapse (native kernel, one pass)": 8,
        "decompress (isal)": 2,
        "read: lines, chunks, progress": 1,
        "write Parquet (n-grams, vocabulary)": 3,
        "vocabulary (tokens, ids)": 4,
        "merge n-gram ranges": 6,
        stages.IMPORTS: 7,
        stages.SHUFFLE: 10,
        stages.DRIVER: 9,
    }
    table = stages.table(stages.breakdown(raw), 10)
    assert table[-1] == "| all | 5.0 | 100% |"


def test_bundle_ends_times_every_bundle_of_an_import(capsys):
    stop = statesampler.StateSampler.stop
    bundle_ends.main([os.path.join(SAMPLE, "2012")])
    bundles = int(capsys.readouterr().out.split(",")[0].removeprefix("bundles "))
    assert bundles > 0  # the stage of the input files, the read stage, the vocabulary's, ...
    assert statesampler.StateSampler.stop is stop  # Beam's own again, for the imports after it


@pytest.mark.parametrize("beam_reading", [False, True])
def test_start_times_the_first_unit_and_beams_inspection(capsys, beam_reading):
    reading, specs = core.get_function_args_defaults, userstate.get_dofn_specs
    start.main([os.path.join(SAMPLE, "2012")] + ["--beam-reading"] * beam_reading)
    out = capsys.readouterr().out
    first, calls = re.fullmatch(r"first work unit after ([\d.]+) s; get_dofn_specs [\d.]+ s over (\d+) calls\n",
                                out).groups()
    assert float(first) > 0 and int(calls) > 0
    # Beam's own again, for the imports after it.
    assert core.get_function_args_defaults is reading and userstate.get_dofn_specs is specs
