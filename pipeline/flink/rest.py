"""The few JobManager REST calls ngramflow needs (https://nightlies.apache.org/flink/flink-docs-release-1.19/docs/ops/rest_api/)."""

import json
import urllib.error
import urllib.request


class RestUnavailable(Exception):
    pass


def get(address: str, path: str, timeout: float = 5, body: dict | None = None) -> dict:
    """GET ``path``, or POST ``body`` to it as JSON."""
    request = urllib.request.Request(f"http://{address}{path}")
    if body is not None:
        request.data, request.method = json.dumps(body).encode(), "POST"
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise RestUnavailable(f"{address}{path}: {err}") from None


def overview(address: str) -> dict:
    """Cluster totals: taskmanagers, slots-total, slots-available, jobs-running, ..."""
    return get(address, "/overview")


def jobmanager_config(address: str) -> dict:
    """The JobManager's configuration: {key: value}, values as strings."""
    return {entry["key"]: entry["value"] for entry in get(address, "/jobmanager/config")}


def jobs(address: str) -> list[dict]:
    """Every job the JobManager knows: jid, name, state, start-time, ..."""
    return get(address, "/jobs/overview")["jobs"]


def checkpoints(address: str, job_id: str) -> dict:
    """The job's checkpoint statistics: counts (completed, failed, in_progress, restored), history, latest."""
    return get(address, f"/jobs/{job_id}/checkpoints")


def stop_with_drain(address: str, job_id: str, savepoint_dir: str) -> str:
    """Ask Flink to stop the job with a final savepoint, after its sources send the end-of-time watermark
    (every event-time window and grouping fires); the request's id, for savepoint_status."""
    return get(address, f"/jobs/{job_id}/stop", body={"drain": True, "targetDirectory": savepoint_dir})["request-id"]


def savepoint_status(address: str, job_id: str, request_id: str) -> dict:
    """{"status": {"id": "IN_PROGRESS" | "COMPLETED"}, "operation": {... "failure-cause"}}"""
    return get(address, f"/jobs/{job_id}/savepoints/{request_id}")
