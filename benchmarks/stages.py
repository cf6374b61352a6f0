"""Where an import's time goes, stage by stage, from one run under a sampling profiler.

    python -m benchmarks.stages FILE... [--workers N] [--rate 100]

Runs ``ngramflow import`` (embedded runner) under py-spy, which samples the Python
stacks of the command and of every worker process it starts (``--subprocesses``;
the native kernel and Arrow count in the Python frame that called them), and
charges each sample to the stage of the deepest frame that names one (STAGES).
Samples are CPU time: py-spy leaves out idle threads, and threads caught waiting
(WAITS) are left out here. py-spy counts a thread that waits for Python's lock as
busy, so worker threads sharing one process inflate the Python-heavy stages:
`make bench` profiles an import with one worker. The profiler slows the run
a little; the shares, not the seconds, are what it measures. py-spy is not one of
the package's dependencies: `make bench` installs it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

#: (stage, the frames that belong to it: function names as py-spy prints them), deepest match wins.
STAGES = (
    # isal's reader decompresses in C, into a line buffer (a block ahead, on a thread of its own): its time is
    # in the frames that call it.
    ("decompress (isal)", ("LineReader.decompress_into", "verify_readable")),
    ("parse and collapse (native kernel, one pass)", ("collapse_chunk", "collapse_natively")),
    ("write Parquet (n-grams, vocabulary)", ("StreamedTables.", "ParquetWriter.")),
    ("vocabulary (tokens, ids)", ("distinct_tokens", "merge_tokens", "number_id_range", "with_rank",
                                  "rank_tokens_in_order", "sort_by_rank", "ranks_in_order", "tokens_by_rank")),
    ("spill sorted run files", ("SpillRuns.", "RunSpiller.", "write_run_file")),
    ("merge n-gram ranges", ("MergeRange.", "merge_range", "merged", "_merge_files", "to_ngram_table")),
    ("read: lines, chunks, progress", ("ReadNgramFile.", "LineReader.")),
)
#: Samples of a process importing modules that no stage claims: the start of the command and of each worker.
IMPORTS = "imports (the command's and each worker's start)"
#: The frames of a thread before its own: a sample with no more is a thread in native code only (gRPC's
#: and Arrow's threads waiting on a futex or in epoll, as `py-spy --native` shows them), left out.
BOOTSTRAP = ("Thread._bootstrap", "Thread._bootstrap_inner", "Thread.run")
#: Frames of a thread that waits: py-spy counts some such threads as active (a wait with a timeout, gRPC's
#: polling), which use next to no CPU; their samples are left out.
WAITS = ("Condition.wait", "Event.wait", "Queue.get", "Semaphore.acquire", "_wait_once", "Popen._try_wait",
         "channel_spin", "_serve", "select", "poll")
#: The innermost frame of a thread pool's thread waiting for work (its queue's get is C code, no frame of its
#: own): py-spy counted the read-ahead pool's idle threads (transforms/read.py) as busy, 5.7 s of an 80M-row run.
IDLE_POOL = "_worker"
#: Samples of a worker (a process, or a thread running a bundle) that no stage claims: Beam's coders, data
#: plane and bundle scheduling.
SHUFFLE = "Beam in the workers (coders, data plane, shuffle, scheduling)"
#: Samples of the command's own process: start, imports, the pipeline's graph, the runner, the manifest.
DRIVER = "the command (graph, runner, manifest)"


def stage_of(frames: list[str]) -> str | None:
    for frame in reversed(frames):
        name = frame.split(" (", 1)[0]
        for stage, names in STAGES:
            if any(name.startswith(n) or name == n.rstrip(".") for n in names):
                return stage
    return None


def breakdown(raw: str) -> dict[str, int]:
    """{stage: samples} of py-spy's raw (collapsed) output of a run with --subprocesses."""
    samples: dict[str, int] = {}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        processes = [f for f in frames if f.startswith("process ")]
        names = [frame.split(" (", 1)[0] for frame in frames if not frame.startswith("process ")]
        if (set(names) <= set(BOOTSTRAP) or names[-1] == IDLE_POOL
                or any(wait in name for name in names[-3:] for wait in WAITS)):
            continue
        stage = stage_of(frames) or (IMPORTS if "_find_and_load" in names else
                                     SHUFFLE if len(processes) > 1 or "SdkWorker.process_bundle" in names else DRIVER)
        samples[stage] = samples.get(stage, 0) + int(count)
    return samples


def profile(files: list[str], workers: int | None, rate: int) -> tuple[dict[str, int], int]:
    """({stage: samples}, samples per second) of one import of FILES."""
    spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
    if not spy:
        raise SystemExit("py-spy is not installed: pip install py-spy (make bench does)")
    with tempfile.TemporaryDirectory() as scratch:
        raw = os.path.join(scratch, "samples.txt")
        command = [sys.executable, "-m", "ngramflow.cli", "import", *files, "--output",
                   os.path.join(scratch, "out"), "--quiet"] + (["--workers", str(workers)] if workers else [])
        subprocess.run([spy, "record", "--subprocesses", "--rate", str(rate), "--format", "raw", "--output", raw,
                        "--", *command], check=True, capture_output=True)
        return breakdown(open(raw).read()), rate


def table(samples: dict[str, int], rate: int) -> list[str]:
    total = sum(samples.values()) or 1
    order = [stage for stage, _ in STAGES] + [SHUFFLE, IMPORTS, DRIVER]
    lines = ["| stage | CPU s (sampled) | share |", "| --- | ---: | ---: |"]
    lines += [f"| {stage} | {samples.get(stage, 0) / rate:.1f} | {100 * samples.get(stage, 0) / total:.1f}% |"
              for stage in order]
    lines.append(f"| all | {total / rate:.1f} | 100% |")
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--workers", type=int, default=None, help="as import's --workers (default: its own)")
    parser.add_argument("--rate", type=int, default=100, help="samples per second")
    args = parser.parse_args(argv)
    print("\n".join(table(*profile(args.files, args.workers, args.rate))))


if __name__ == "__main__":
    main()
