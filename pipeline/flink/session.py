"""One import on Flink: configuration, job server and worker for the run, and what it leaves behind.

``flink_run(flink, parallelism, ...)`` yields the Beam pipeline arguments that
send the pipeline to Flink, and tears everything down afterwards; of the
import's options it sees the Flink group (FlinkOptions) only. Checkpointed runs
write their checkpoints under CHECKPOINT_DIR/RUN_ID/; a failed run points the
user at the newest retained one (``--resume-from``), a successful run deletes them.
"""

import contextlib
import glob
import json
import os
import re
import resource
import shutil
import time
from dataclasses import dataclass, field

from ngramflow.errors import RunFailed, UserError
from ngramflow.pipeline.flink import config, jvm, rest
from ngramflow.pipeline.flink.cluster import shares_disk
from ngramflow.pipeline.flink.job_server import JobServer, LoopbackWorkerPool
from ngramflow.pipeline.flink.options import LOCAL, FlinkOptions
from ngramflow.pipeline.flink.provision import FLINK_HOME
from ngramflow.transforms.lines import InputFileError

#: Streaming sources stop this long after they have emitted everything, so the
#: bounded job can end (Beam keeps them alive forever otherwise).
SOURCE_IDLE_MS = 2000
MAX_BUNDLE_SIZE = 1
#: In a checkpointed run's checkpoint folder: what the run imports, to check a resume against.
RUN_RECORD = "ngramflow-run.json"
_COMPLETED = re.compile(r"Completed checkpoint (\d+) for job \w+ \((\d+) bytes, checkpointDuration=(\d+) ms")


#: Flink's words when a checkpoint holds state the submitted program has no operator for.
NOT_MAPPED = "Cannot map checkpoint/savepoint state for operator"


@dataclass
class FlinkRunInfo:
    """What the manifest records about a Flink run."""

    flink_master: str
    mode: str
    checkpoint_dir: str | None = None
    resumed_from: str | None = None
    job_server_peak_rss_bytes: int | None = None
    #: This process: with LOOPBACK workers, the Python SDK harness runs here.
    python_worker_peak_rss_bytes: int | None = None
    checkpoints: list[dict] = field(default_factory=list)
    #: The largest group, accumulator or state value per kind of key, in bytes (merge.key_sizes).
    largest_key_bytes: dict = field(default_factory=dict)
    #: The REST endpoint of the cluster that runs the job (the embedded one's too); not recorded.
    rest_address: str | None = None

    def recorded(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "rest_address"}


def newest_checkpoint(path: str) -> str | None:
    """The newest complete checkpoint (a chk-N folder with _metadata) at or under ``path``."""
    if os.path.exists(os.path.join(path, "_metadata")):
        return path
    found = (glob.glob(os.path.join(path, "chk-*", "_metadata"))
             + glob.glob(os.path.join(path, "*", "chk-*", "_metadata")))
    if not found:
        return None
    return os.path.dirname(max(found, key=lambda m: (os.path.getmtime(m), m)))


def resume_point(path: str) -> str:
    local = path[len("file://"):] if path.startswith("file://") else path
    if "://" in local:  # a checkpoint on a cluster's shared storage: Flink checks it
        return path
    found = newest_checkpoint(os.path.abspath(local)) if os.path.isdir(local) else None
    if not found:
        raise UserError(f"--resume-from {path}: no completed checkpoint (chk-N/_metadata) there")
    return found


def run_identity(options: dict, files, output: str) -> dict:
    """What a checkpoint's state depends on: the exact input files, the options that shape the counts
    (ImportOptions.resume_identity), the output."""
    return json.loads(json.dumps({"inputs": [[path, size] for path, size in files], "options": options,
                                  "output": os.path.abspath(output)}))


def check_resumable(checkpoint: str, identity: dict) -> None:
    """Refuse a checkpoint taken by an import of other inputs, options or output: its counts would be wrong."""
    record = os.path.join(os.path.dirname(os.path.dirname(checkpoint)), RUN_RECORD)
    if "://" in checkpoint or not os.path.exists(record):
        return  # shared storage, or a checkpoint from elsewhere: Flink's own checks only
    with open(record) as fh:
        recorded = json.load(fh)
    differs = [part for part in ("inputs", "options", "output") if recorded.get(part) != identity[part]]
    if differs:
        raise UserError(f"--resume-from {checkpoint} belongs to an import with other {' and '.join(differs)}; "
                        "resume with the interrupted command (same inputs, options and --output), "
                        "or start over without --resume-from")


def _completed_checkpoints(log_path: str) -> list[dict]:
    """Checkpoints the embedded cluster completed, from its log (it has no REST endpoint)."""
    try:
        with open(log_path, errors="replace") as fh:
            return [{"id": int(m[1]), "bytes": int(m[2]), "duration_ms": int(m[3])}
                    for m in _COMPLETED.finditer(fh.read())]
    except OSError:
        return []


def _cluster_checkpoints(master: str, since_ms: int) -> list[dict]:
    """Checkpoints of the Beam job this run submitted to a cluster, from its REST endpoint."""
    try:
        ours = [j for j in rest.jobs(master) if j["name"].startswith("BeamApp") and j["start-time"] >= since_ms]
        if len(ours) != 1:
            return []
        history = rest.checkpoints(master, ours[0]["jid"])["history"]
    except (rest.RestUnavailable, KeyError):
        return []
    return sorted(({"id": c["id"], "bytes": c.get("checkpointed_size", c.get("state_size")),
                    "duration_ms": c["end_to_end_duration"]} for c in history if c["status"] == "COMPLETED"),
                  key=lambda c: c["id"])


def _pipeline_args(flink: FlinkOptions, parallelism: int, endpoint: str, worker: str,
                   checkpoint_root: str | None) -> list[str]:
    args = ["--runner=PortableRunner", f"--job_endpoint={endpoint}", "--environment_type=EXTERNAL",
            f"--environment_config={worker}", f"--parallelism={parallelism}"]
    if flink.checkpointed:
        args += ["--streaming", f"--checkpointing_interval={int(flink.checkpoint_interval * 1000)}",
                 "--checkpointing_mode=EXACTLY_ONCE",
                 # Without it, elements in flight at a checkpoint were dropped as late (PLATFORM.md).
                 "--finish_bundle_before_checkpointing",
                 f"--shutdown_sources_after_idle_ms={SOURCE_IDLE_MS}",
                 "--externalized_checkpoints_enabled", "--retain_externalized_checkpoints_on_cancellation",
                 # A flag whose Java default is true: naming it sets it to false (Beam's option
                 # bridge), so a checkpoint that fails while tasks finish does not fail the import.
                 "--fail_on_checkpointing_errors",
                 # A checkpoint waits for every open bundle to finish: one work unit (a slice or a
                 # pack of small files) per bundle bounds the wait to one slice per worker. Elements
                 # are large (slices, tables), so the round trip per element costs nothing measurable.
                 f"--max_bundle_size={MAX_BUNDLE_SIZE}",
                 # Barriers overtake the input files queued in front of the read stage; aligned,
                 # a checkpoint waited until every file was read (all of them are emitted by one
                 # element of Create). The price: see "Known limits" in the README.
                 "--unaligned_checkpoint_enabled",
                 "--state_backend=rocksdb", f"--state_backend_storage_path=file://{checkpoint_root}"]
    elif flink.flink_master == LOCAL:  # Beam's own embedded batch environment; else the job server's
        args.append(f"--flink_master={LOCAL}")  # master, [auto], takes its context ones (StableUidJobServer)
    return args


@contextlib.contextmanager
def flink_run(flink: FlinkOptions, parallelism: int, identity: dict, resume: str | None, classpath=()):
    """Job server (with the embedded cluster for [local]) and Python worker for one import.

    Yields (Beam pipeline arguments, FlinkRunInfo). A failure of the job comes
    out as RunFailed naming the job server's log and, for checkpointed runs,
    the checkpoint to resume from; input errors pass through unchanged.
    ``identity`` (run_identity) is recorded beside the run's checkpoints;
    ``resume`` is the checkpoint to resume from (resume_point), if any; ``classpath``: folders of
    connector jars for the job server and the job (JobServer).
    """
    run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    run_dir = os.path.join(FLINK_HOME, "runs", run_id)
    info = FlinkRunInfo(flink_master=flink.flink_master, mode=flink.mode)
    checkpoint_root = None
    settings = {"io.tmp.dirs": os.path.join(run_dir, "tmp")}
    if flink.checkpointed:
        checkpoint_root = os.path.join(os.path.abspath(flink.checkpoint_dir), run_id)
        info.checkpoint_dir, info.resumed_from = checkpoint_root, resume
        settings["state.checkpoints.dir"] = f"file://{checkpoint_root}"
        os.makedirs(checkpoint_root, exist_ok=True)
        with open(os.path.join(checkpoint_root, RUN_RECORD), "w") as fh:
            json.dump(identity, fh)
        if resume:  # the job server's environments read it from the configuration (StableUidJobServer)
            settings["execution.savepoint.path"] = resume
    heap_flags = []
    info.rest_address = flink.flink_master
    if flink.flink_master == LOCAL:
        # The embedded cluster's REST endpoint on a known port of 127.0.0.1 (else Flink picks one).
        rest_port = jvm.free_port()
        settings.update({"rest.address": "127.0.0.1", "rest.bind-address": "127.0.0.1", "rest.port": rest_port,
                         "rest.bind-port": str(rest_port)})
        info.rest_address = f"127.0.0.1:{rest_port}"
        bound = flink.memory_bound()
        settings.update(config.embedded_memory(bound))
        heap_flags = config.embedded_heap_flags(bound)
    conf_dir = config.write_conf_dir(os.path.join(run_dir, "conf"), settings)
    log_path = os.path.join(run_dir, "job-server.log")
    jars_here = flink.flink_master != LOCAL and shares_disk(flink.flink_master)
    server = JobServer(flink.flink_master, conf_dir, log_path, heap_flags, classpath, jars_here)
    try:
        with LoopbackWorkerPool() as worker:
            server.start()
            started_ms = int(time.time() * 1000)
            try:
                yield _pipeline_args(flink, parallelism, server.endpoint, worker.address, checkpoint_root), info
            finally:
                server.stop()
                info.job_server_peak_rss_bytes = server.peak_rss
                info.python_worker_peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
                info.checkpoints = (_completed_checkpoints(log_path) if flink.flink_master == LOCAL
                                    else _cluster_checkpoints(flink.flink_master, started_ms))
    except Exception as err:
        found = checkpoint_root and newest_checkpoint(checkpoint_root)
        if checkpoint_root and not found:  # only the run record: nothing to resume from
            shutil.rmtree(checkpoint_root, ignore_errors=True)
        if isinstance(err, (RunFailed, UserError)) or InputFileError.MARKER in str(err):
            raise
        if resume and NOT_MAPPED in str(err):
            # Operator ids depend only on the program (StableUidJobServer): this one is not the checkpoint's.
            raise RunFailed(f"{resume} holds state for operators this import does not have: resume with the "
                            "ngramflow, Beam and Flink versions that took the checkpoint "
                            f"(job server log: {log_path})") from None
        hint = f"; resume with --resume-from {found}" if found else ""
        raise RunFailed(f"the Flink job failed: {_first_line(err)} (job server log: {log_path}){hint}") from None
    else:
        if checkpoint_root:  # the dataset is complete: nothing to resume
            shutil.rmtree(checkpoint_root, ignore_errors=True)
    finally:
        shutil.rmtree(os.path.join(run_dir, "artifacts"), ignore_errors=True)
        shutil.rmtree(os.path.join(run_dir, "tmp"), ignore_errors=True)


def _first_line(err: Exception) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]
