"""Peak memory of every process of a checkpointed Flink import on a local session cluster.

    .venv/bin/python tools/flink_memory_benchmark.py [--rows 2400000 | --corpus DIR] [--taskmanager-memory 2g]
                                                     [--slice-size 64m]

Generates a synthetic corpus (4x the Flink tests' corpus by default) or takes
the files under --corpus, starts a cluster (one JobManager, one TaskManager
bounded to --taskmanager-memory), runs `ngramflow import --runner flink --mode
checkpointed` against it, and prints the checkpoint durations and a Markdown
table of peak RSS (VmHWM) per process: job server, JobManager, TaskManager, and
the Python worker (the import process itself, LOOPBACK).
Everything it starts is stopped by pid; its files live in a temporary folder.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)

from ngramflow.corpus.synthetic import generate  # noqa: E402
from ngramflow.pipeline.flink import jvm, rest  # noqa: E402
from ngramflow.pipeline.flink.cluster import SessionCluster  # noqa: E402
from ngramflow.pipeline.flink.options import DEFAULT_TASKMANAGER_MEMORY  # noqa: E402


def mib(n) -> str:
    return f"{n / 2**20:,.0f} MiB"


def checkpoint_timeline(address: str, job: str, history: list[dict]) -> str:
    """When the read stage ran and when each checkpoint was triggered and ended, in seconds from the job's start."""
    vertices = rest.get(address, f"/jobs/{job}")["vertices"]
    start = min(v["start-time"] for v in vertices)
    (read,) = [v for v in vertices if "Spread work units over workers" in v["name"]]
    events = ", ".join(f"#{c['id']} {(c['trigger_timestamp'] - start) / 1000:.1f}-"
                       f"{(c['latest_ack_timestamp'] - start) / 1000:.1f} s {c['status'].lower()}"
                       for c in sorted(history, key=lambda c: c["id"]))
    return (f"read stage ran {(read['start-time'] - start) / 1000:.1f}-{(read['end-time'] - start) / 1000:.1f} s "
            f"of the job; checkpoints: {events}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_400_000)
    parser.add_argument("--corpus", help="import these files instead of a generated corpus")
    parser.add_argument("--taskmanager-memory", default=DEFAULT_TASKMANAGER_MEMORY)
    parser.add_argument("--checkpoint-interval", default="2")
    parser.add_argument("--slice-size", default="64m")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ngramflow-flink-bench-") as tmp:
        corpus = args.corpus
        if corpus is None:
            corpus = os.path.join(tmp, "corpus", "2012")
            generate(os.path.join(tmp, "corpus"), rows=args.rows, seed=7, orders=(1, 2, 3), formats=("2012",),
                     malformed=5)
        cluster = SessionCluster(os.path.join(tmp, "cluster"))
        try:
            cluster.up(taskmanagers=1, memory=args.taskmanager_memory, slots=2)
            started = time.time()
            done = subprocess.run(
                [sys.executable, "-m", "ngramflow.cli", "import", corpus, "--slice-size", args.slice_size,
                 "--output", os.path.join(tmp, "out"), "--quiet", "--runner", "flink", "--mode", "checkpointed",
                 "--checkpoint-interval", args.checkpoint_interval, "--flink-master", cluster.rest_address,
                 "--checkpoint-dir", os.path.join(tmp, "checkpoints")],
                cwd=PROJECT, capture_output=True, text=True)
            wall = time.time() - started
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            state = cluster.state()
            jobmanager = jvm.peak_rss_bytes(state["jobmanager"]["pid"])
            (taskmanager_pid,) = cluster.taskmanager_pids()
            taskmanager = jvm.peak_rss_bytes(taskmanager_pid)
            (job,) = rest.jobs(cluster.rest_address)
            stats = rest.checkpoints(cluster.rest_address, job["jid"])
            counts = stats["counts"]
            timeline = checkpoint_timeline(cluster.rest_address, job["jid"], stats["history"])
        finally:
            cluster.down()
        manifest = json.load(open(os.path.join(tmp, "out", "_manifest.json")))
    flink = manifest["flink"]
    durations = sorted(c["duration_ms"] for c in flink["checkpoints"])
    print(f"corpus: {manifest['rows_read']:,} rows in {len(manifest['inputs'])} files; "
          f"{sum(o['ngrams'] for o in manifest['orders'].values()):,} n-grams; import wall time {wall:.0f} s")
    print(f"checkpoints: {counts['completed']} completed, {counts['failed']} failed; durations "
          f"min {durations[0] if durations else '-'} ms, median {durations[len(durations) // 2] if durations else '-'} "
          f"ms, max {durations[-1] if durations else '-'} ms")
    print(f"{timeline}\n")
    print("| process | peak RSS |\n| --- | --- |")
    print(f"| job server (FlinkJobServerDriver) | {mib(flink['job_server_peak_rss_bytes'])} |")
    print(f"| JobManager | {mib(jobmanager)} |")
    print(f"| TaskManager (bound {args.taskmanager_memory}) | {mib(taskmanager)} |")
    print(f"| Python worker (the import process, LOOPBACK) | {mib(flink['python_worker_peak_rss_bytes'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
