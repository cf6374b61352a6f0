"""Ending an import that reads a queue: its Kafka source never ends by itself.

The job's groupings (totals, ranges, vocabulary, sinks) are in the global window and fire when the
watermark passes its end, which an unbounded source never reaches. So once the job has read the end marker
(pipeline/kafka/read.py writes layout.QUEUE_END), the run waits for a checkpoint *triggered* after that: its
source offsets are past the marker, so every file the marker counts is read or restorable from it. Then it
stops the job with Flink's "stop with savepoint --drain": the sources stop and send the end-of-time
watermark, every element in flight is processed first, the groupings fire, the sinks write, and the job
finishes.

A second file published under a name already counted is recorded by the job too: the run cancels the job
and fails with one line (raised in the job, it would fail only after Flink's restarts had met it again).

Restores (a lost TaskManager) are watched through the REST endpoint: a restore to a checkpoint taken before
that one makes the marker unread again, so the run waits for the restored job to record it anew; a stop
that fails is asked for again.
"""

import json
import os
import time

from apache_beam.io.filesystems import FileSystems
from apache_beam.runners.runner import PipelineState

from ngramflow.corpus import queue
from ngramflow.pipeline.flink import rest
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout

POLL = 0.5


def _record(out: OutputDir, name: str) -> dict | None:
    if not out.exists(name):
        return None
    with FileSystems.open(out.join(name)) as fh:
        return json.load(fh)


def read_end(out: OutputDir) -> dict | None:
    """The end marker's record ({"files": N, "written_ms": ...}) once the job has read the marker."""
    return _record(out, layout.QUEUE_END)


def _fail_on_conflict(result, out: OutputDir) -> None:
    """A second file under a counted name (pipeline/kafka/read.py): cancel the job, fail the run."""
    conflict = _record(out, layout.QUEUE_CONFLICT)
    if conflict is not None:
        result.cancel()
        raise queue.conflict(conflict["name"], conflict["counted"], conflict["other"])


def _our_job(address: str, result, since_ms: int) -> str | None:
    """The Flink job of ``result``: Flink names it after Beam's job id (its part before "_"); failing that
    (another Beam version), the one Beam job that started since the submission."""
    name = str(getattr(result, "_job_id", "")).split("_")[0]
    live = [j for j in rest.jobs(address) if j["name"].startswith("BeamApp") and j["start-time"] >= since_ms
            and j["state"] not in ("FINISHED", "FAILED", "CANCELED")]
    named = [j for j in live if j["name"] == name]
    return named[0]["jid"] if named else (live[0]["jid"] if len(live) == 1 else None)


class _Checkpoints:
    """What the REST endpoint says of a job's checkpoints at one moment."""

    def __init__(self, address: str, job: str):
        stats = rest.checkpoints(address, job)
        history = stats.get("history", [])
        self.newest = max((c["id"] for c in history), default=0)
        self.newest_completed = max((c["id"] for c in history if c["status"] == "COMPLETED"), default=0)
        restored = (stats.get("latest") or {}).get("restored") or {}
        self.restores = stats["counts"].get("restored", 0)
        self.restored_id = restored.get("id", 0)
        self.restored_ms = restored.get("restore_timestamp", 0)
        self.triggered_ms = {c["id"]: c["trigger_timestamp"] for c in history}

    def holds_marker(self, end: dict) -> bool:
        """Whether the job's state since its last restore includes the marker recorded in ``end``: it was
        recorded after that restore, or the restored checkpoint was triggered after it was recorded."""
        return (not self.restores or end["written_ms"] > self.restored_ms
                or self.triggered_ms.get(self.restored_id, 0) > end["written_ms"])


def stop_at_end_of_queue(result, out: OutputDir, address: str, savepoint_dir: str, since_ms: int) -> None:
    """Drive the job of ``result`` to its end (see the module's doc); returns once it is in a final state."""
    target = savepoint_dir if "://" in savepoint_dir else "file://" + os.path.abspath(savepoint_dir)
    job = marked = request = None
    while not PipelineState.is_terminal(result.state):
        time.sleep(POLL)
        _fail_on_conflict(result, out)
        try:
            job = job or _our_job(address, result, since_ms)
            if job is None:
                continue
            now = _Checkpoints(address, job)
            if marked is not None and now.restores != marked[1] and now.restored_id <= marked[0]:
                marked = request = None  # restored to before the marker: it is read again
            if request is not None:
                operation = rest.savepoint_status(address, job, request).get("operation") or {}
                if "failure-cause" in operation:
                    request = None
                continue
            end = read_end(out)
            if marked is None and end is not None and now.holds_marker(end):
                marked = (now.newest, now.restores)
            if marked is not None and now.newest_completed > marked[0]:
                request = rest.stop_with_drain(address, job, target)
        except rest.RestUnavailable:
            continue  # a cluster restarting the job, or the embedded one shutting down after it
