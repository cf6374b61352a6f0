"""The few JobManager REST calls ngramflow needs (https://nightlies.apache.org/flink/flink-docs-release-1.19/docs/ops/rest_api/)."""

import json
import urllib.error
import urllib.request


class RestUnavailable(Exception):
    pass


def get(address: str, path: str, timeout: float = 5) -> dict:
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=timeout) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise RestUnavailable(f"{address}{path}: {err}") from None


def overview(address: str) -> dict:
    """Cluster totals: taskmanagers, slots-total, slots-available, jobs-running, ..."""
    return get(address, "/overview")


def jobs(address: str) -> list[dict]:
    """Every job the JobManager knows: jid, name, state, start-time, ..."""
    return get(address, "/jobs/overview")["jobs"]


def checkpoints(address: str, job_id: str) -> dict:
    """The job's checkpoint statistics: counts (completed, failed, in_progress, restored), history, latest."""
    return get(address, f"/jobs/{job_id}/checkpoints")
