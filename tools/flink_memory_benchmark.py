"""Peak memory of every process, and the largest key, of a Flink import on a local session cluster.

    .venv/bin/python tools/flink_memory_benchmark.py [--rows 2400000 | --shape a|b|c --rows N | --corpus DIR]
                                                     [--mode batch|checkpointed] [--taskmanager-memory 2g]
                                                     [--slice-size 64m] [--check] [--workdir DIR]

Takes the files under --corpus, or generates a corpus: with --shape, a scale
corpus of ``ngramflow.corpus.scale`` (cached under --workdir, imported with
``--pos keep`` so that every distinct n-gram is totalled, as DuckDB does);
without it, a synthetic corpus of ``corpus.synthetic`` (4x the Flink tests'
by default). Starts a cluster (one JobManager, one TaskManager bounded to
--taskmanager-memory), runs ``ngramflow import --runner flink --mode MODE``
against it, and prints: the checkpoints (count, durations, when they ran
against the read stage), the peak RSS (VmHWM) per process (job server,
JobManager, TaskManager, and the Python worker: the import process itself,
LOOPBACK), the largest group / keyed-state value per kind of key (the Beam
metrics of transforms/merge.py, against sizing.KEY_BUDGET), and one Markdown
table row of all of it. --check also runs DuckDB's GROUP BY of the same files
and compares the totals. Everything it starts is stopped by pid.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT)

from benchmarks.bench import _peer  # noqa: E402
from benchmarks.measure import _children_cpu  # noqa: E402
from benchmarks.scale import _PEERS, _totals_agree  # noqa: E402
from ngramflow.corpus import scale  # noqa: E402
from ngramflow.corpus.synthetic import generate  # noqa: E402
from ngramflow.pipeline.flink import jvm, rest  # noqa: E402
from ngramflow.pipeline.flink.cluster import SessionCluster  # noqa: E402
from ngramflow.pipeline.flink.options import DEFAULT_TASKMANAGER_MEMORY  # noqa: E402
from ngramflow.schemas import layout  # noqa: E402
from ngramflow.transforms.merge import GROUP_METRICS  # noqa: E402
from ngramflow.transforms.sizing import key_budget  # noqa: E402

ROW = ("| shape | rows | mode | keys, ranges | wall | CPU | CPU µs/row | job server | JobManager | TaskManager "
       "| Python worker | largest group (n-gram key / range / token key / vocabulary part) "
       "| checkpoints (completed / during the read / failed) "
       "| median checkpoint while reading, longest | totals = DuckDB |")


def cpu_seconds(pid: int) -> float:
    """User + system time of a running process so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:,.0f} MiB" if n >= 10 << 20 else f"{n / 2**20:.2f} MiB"


def checkpoint_timeline(address: str, job: str, history: list[dict]) -> tuple[str, list[dict]]:
    """(when the read ran and each checkpoint was triggered and ended, in seconds from the job's start;
    the completed checkpoints triggered while the read ran).

    The read runs until the task that hands out work units has handed out the last (the reading task's
    own end waits for the checkpoint that spans the end of the input: every key's group fires in one
    action of each task, which takes no checkpoint until it is done)."""
    details = rest.get(address, f"/jobs/{job}")
    vertices = {v["id"]: v for v in details["vertices"]}
    start = min(v["start-time"] for v in vertices.values())
    (read,) = [v for v in vertices.values() if "Spread work units over workers" in v["name"]]
    (node,) = [n for n in details["plan"]["nodes"] if n["id"] == read["id"]]
    read_end = max(vertices[i["id"]]["end-time"] for i in node["inputs"])
    events = ", ".join(f"#{c['id']} {(c['trigger_timestamp'] - start) / 1000:.1f}-"
                       f"{(c['latest_ack_timestamp'] - start) / 1000:.1f} s {c['status'].lower()}"
                       for c in sorted(history, key=lambda c: c["id"]))
    during = [c for c in history if c["status"] == "COMPLETED"
              and read["start-time"] <= c["trigger_timestamp"] <= read_end]
    return (f"the read ran {(read['start-time'] - start) / 1000:.1f}-{(read_end - start) / 1000:.1f} s of the job "
            f"(its task ended at {(read['end-time'] - start) / 1000:.1f} s); checkpoints: {events}"), during


def corpus_of(args, tmp: str) -> tuple[str, list[str]]:
    """(folder to import, extra import options)."""
    if args.corpus:
        return args.corpus, []
    if args.shape:
        folder = os.path.join(args.workdir, f"{args.shape}-{args.rows}")
        scale.generate(folder, args.shape, args.rows)
        return folder, ["--pos", "keep"]
    generate(os.path.join(tmp, "corpus"), rows=args.rows, seed=7, orders=(1, 2, 3), formats=("2012",), malformed=5)
    return os.path.join(tmp, "corpus", "2012"), []


def duckdb_agrees(args, corpus: str, dataset: str, tmp: str) -> bool:
    files = [os.path.join(corpus, name) for name in sorted(scale._read_stamp(corpus)["files"])]
    duck = os.path.join(tmp, "duckdb.parquet")
    subprocess.run(_peer(_PEERS[args.shape], duck, files), check=True, env={**os.environ, "PYTHONPATH": PROJECT})
    with open(os.path.join(dataset, "_manifest.json")) as fh:
        return _totals_agree(json.load(fh), duck)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_400_000)
    parser.add_argument("--shape", choices=sorted(scale.SHAPES), help="a scale corpus of this shape")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "ngramflow-scale"),
                        help="where --shape corpora are cached")
    parser.add_argument("--corpus", help="import these files instead of a generated corpus")
    parser.add_argument("--mode", choices=("batch", "checkpointed"), default="checkpointed")
    parser.add_argument("--taskmanager-memory", default=DEFAULT_TASKMANAGER_MEMORY)
    parser.add_argument("--checkpoint-interval", default="2")
    parser.add_argument("--slice-size", default="64m")
    parser.add_argument("--timeout", type=float, default=1800, help="stop the import after this many seconds")
    parser.add_argument("--check", action="store_true", help="compare the totals with DuckDB's (--shape only)")
    parser.add_argument("--save-manifest", metavar="PATH", help="keep a copy of the import's manifest")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the cluster's logs (JobManager, TaskManager) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ngramflow-flink-bench-") as tmp:
        corpus, options = corpus_of(args, tmp)
        if args.mode == "checkpointed":
            options += ["--slice-size", args.slice_size, "--checkpoint-interval", args.checkpoint_interval,
                        "--checkpoint-dir", os.path.join(tmp, "checkpoints")]
        cluster = SessionCluster(os.path.join(tmp, "cluster"))
        try:
            cluster.up(taskmanagers=1, memory=args.taskmanager_memory, slots=2)
            started, cpu_before = time.time(), _children_cpu()
            process = subprocess.Popen(
                [sys.executable, "-m", "ngramflow.cli", "import", corpus, *options,
                 "--output", os.path.join(tmp, "out"), "--quiet", "--runner", "flink", "--mode", args.mode,
                 "--flink-master", cluster.rest_address],
                cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                _, err = process.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:  # a job that hangs after a failure in the TaskManager
                process.send_signal(signal.SIGTERM)  # the CLI stops its job server on SIGTERM
                _, err = process.communicate()
                err += f"\ntimed out after {args.timeout:.0f} s"
            wall = time.time() - started
            # The import process with its job server, and the cluster's JVMs: CPU time, unlike wall
            # time, barely changes when other jobs share the machine.
            state = cluster.state()
            (taskmanager_pid,) = cluster.taskmanager_pids()
            cpu = (_children_cpu() - cpu_before + cpu_seconds(taskmanager_pid)
                   + cpu_seconds(state["jobmanager"]["pid"]))
            jobmanager = jvm.peak_rss_bytes(state["jobmanager"]["pid"])
            taskmanager = jvm.peak_rss_bytes(taskmanager_pid)
            if process.returncode != 0:  # what it cost until it failed, and why (the "before" of issue 14)
                reason = err.strip().splitlines()[-1][:300]
                with open(state["taskmanagers"][0]["log"], errors="replace") as fh:
                    errors = [line.strip() for line in fh if "Error:" in line]
                if errors:  # what went wrong in the TaskManager first
                    reason += f"; TaskManager: {errors[0][:200]}"
                print(f"import failed after {wall:.0f} s: {reason}\nJobManager {mib(jobmanager)}, TaskManager "
                      f"{mib(taskmanager)} (the job server and Python worker died with the import)")
                print(ROW)
                print(f"| {args.shape or '-'} | {args.rows / 1e6:,.1f}M | {args.mode} | - | failed after {wall:.0f} s "
                      f"| {cpu:,.0f} s | - | - | {mib(jobmanager)} | {mib(taskmanager)} | - | - | - | - | - "
                      f"| {reason} |")
                return 1
            (job,) = rest.jobs(cluster.rest_address)
            if args.mode == "checkpointed":
                stats = rest.checkpoints(cluster.rest_address, job["jid"])
                timeline, during = checkpoint_timeline(cluster.rest_address, job["jid"], stats["history"])
        finally:
            if args.keep_logs:
                shutil.copytree(cluster.log_dir, args.keep_logs, dirs_exist_ok=True)
            cluster.down()
        agrees = duckdb_agrees(args, corpus, os.path.join(tmp, "out"), tmp) if args.check and args.shape else None
        manifest = json.load(open(os.path.join(tmp, "out", "_manifest.json")))
        if args.save_manifest:
            shutil.copyfile(os.path.join(tmp, "out", "_manifest.json"), args.save_manifest)
        # The n-gram ranges: one part file each per order; checkpointed mode merges under keys first.
        ranges = len({os.path.basename(f) for f in manifest["files"] if f.startswith(layout.NGRAMS + "/")})
        keys = manifest["aggregation"].get("keys")
        spread = f"{ranges:,} ranges" if keys is None else f"{keys:,} keys, {ranges:,} ranges"
    flink = manifest["flink"]
    # Year rows, as corpus.scale counts them (a 2020 line holds several), so both shapes compare row for row.
    rows = scale._read_stamp(corpus)["rows"] if args.shape else manifest["rows_read"]
    input_bytes = sum(i["size"] for i in manifest["inputs"])
    durations = sorted(c["duration_ms"] for c in flink["checkpoints"])
    # The median of the checkpoints taken while reading; the longest of all spans the end of the input.
    reading = sorted(c["end_to_end_duration"] for c in during) if args.mode == "checkpointed" else []
    median = reading[len(reading) // 2] if reading else None
    largest = flink["largest_key_bytes"]
    print(f"corpus: {rows:,} rows ({manifest['rows_read']:,} lines) in {len(manifest['inputs'])} files, "
          f"{input_bytes / 1e6:,.1f} MB; "
          f"{sum(o['ngrams'] for o in manifest['orders'].values()):,} n-grams; {spread} "
          f"(budget {mib(key_budget())}); import wall time {wall:.0f} s, CPU time {cpu:,.0f} s")
    if args.mode == "checkpointed":
        counts = stats["counts"]
        print(f"checkpoints: {counts['completed']} completed ({len(during)} triggered during the read), "
              f"{counts['failed']} failed; durations min {durations[0] if durations else '-'} ms, median while "
              f"reading {median if reading else '-'} ms, max {durations[-1] if durations else '-'} ms")
        print(timeline)
    print(f"largest values per key: {json.dumps(largest)}\n")
    print("| process | peak RSS |\n| --- | --- |")
    print(f"| job server (FlinkJobServerDriver) | {mib(flink['job_server_peak_rss_bytes'])} |")
    print(f"| JobManager | {mib(jobmanager)} |")
    print(f"| TaskManager (bound {args.taskmanager_memory}) | {mib(taskmanager)} |")
    print(f"| Python worker (the import process, LOOPBACK) | {mib(flink['python_worker_peak_rss_bytes'])} |\n")
    checkpoints = (f"{counts['completed']} / {len(during)} / {counts['failed']} | {median:,} ms, {durations[-1]:,} ms"
                   if reading else "- | -")
    print(ROW)
    print(f"| {args.shape or '-'} | {rows / 1e6:,.1f}M | {args.mode} | {spread} | {wall:.0f} s "
          f"| {cpu:,.0f} s | {cpu / rows * 1e6:.2f} | {mib(flink['job_server_peak_rss_bytes'])} | {mib(jobmanager)} "
          f"| {mib(taskmanager)} | {mib(flink['python_worker_peak_rss_bytes'])} "
          f"| {' / '.join(mib(largest.get(name)) for name in GROUP_METRICS)} | {checkpoints} "
          f"| {'-' if agrees is None else 'yes' if agrees else '**no**'} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"shape": args.shape, "rows": rows, "mode": args.mode, "keys": keys, "ranges": ranges,
                       "wall_seconds": wall, "cpu_seconds": cpu, "job_server_rss": flink["job_server_peak_rss_bytes"],
                       "jobmanager_rss": jobmanager, "taskmanager_rss": taskmanager,
                       "python_worker_rss": flink["python_worker_peak_rss_bytes"], "largest_key_bytes": largest,
                       "checkpoint_median_ms": median, "checkpoint_max_ms": durations[-1] if durations else None,
                       "checkpoints_completed": counts["completed"] if args.mode == "checkpointed" else None,
                       "checkpoints_during_read": len(during) if args.mode == "checkpointed" else None,
                       "totals_equal_duckdb": agrees}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
