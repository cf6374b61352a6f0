"""`ngramflow flink ...`: provision the Java side, run a local session cluster."""

import argparse
import json
import sys

from ngramflow.pipeline.option_fields import typed
from ngramflow.pipeline.flink import provision
from ngramflow.pipeline.flink.cluster import DEFAULT_DIR, SessionCluster
from ngramflow.pipeline.flink.options import DEFAULT_TASKMANAGER_MEMORY


def _log(message: str) -> None:
    print(message, file=sys.stderr)


def _provision(args) -> int:
    lib, launcher = provision.ensure_job_server(_log), provision.ensure_launcher(_log)
    dist = provision.ensure_dist(_log)
    print(f"job server classpath: {lib} and {launcher}\nFlink {provision.FLINK_DIST_VERSION}: {dist}")
    return 0


def _up(args) -> int:
    status = SessionCluster(args.cluster_dir).up(args.taskmanagers, args.taskmanager_memory, args.slots)
    print(f"Flink session cluster running: web UI {status['web_ui']}, logs in {status['logs']}\n"
          f"import with: ngramflow import ... --runner flink --flink-master {status['rest_address']}")
    return 0


def report_stopped(stopped: list[int]) -> int:
    """What `down` prints: the pids it stopped."""
    print(f"stopped {len(stopped)} process(es)" + (f": {' '.join(map(str, stopped))}" if stopped else ""))
    return 0


def report_status(status: dict, as_json: bool, what: str, running) -> int:
    """What `status` prints: JSON, or ``running(status)`` or that no ``what`` runs; exit 3 when none runs."""
    if as_json:
        print(json.dumps(status, indent=2))
    elif not status["running"]:
        print(f"no {what} running in {status['folder']}")
    else:
        print(running(status))
    return 0 if status["running"] else 3


def _down(args) -> int:
    return report_stopped(SessionCluster(args.cluster_dir).down())


def _status(args) -> int:
    return report_status(SessionCluster(args.cluster_dir).status(), args.json, "Flink cluster",
                         lambda status: "\n".join(f"{k:<24}{v}" for k, v in status.items() if k != "running"))


def add_flink_commands(sub) -> None:
    p = sub.add_parser("flink", help="provision Flink and run a local Flink session cluster",
                       description="A local Flink 1.19 session cluster (a JobManager and TaskManagers as "
                                   "separate JVMs on 127.0.0.1) for 'ngramflow import --runner flink "
                                   "--flink-master HOST:PORT', and the one-time build of the Java side.")
    commands = p.add_subparsers(dest="flink_command", required=True, metavar="COMMAND")
    c = commands.add_parser("provision", help="build the job server classpath (Maven) and fetch Flink (PyPI) "
                                              "into the cache, once")
    c.set_defaults(handler=_provision)
    for name, handler, text in (("up", _up, "start the cluster, or whatever part of it is not running"),
                                ("down", _down, "stop the cluster's processes (by their recorded pids)"),
                                ("status", _status, "show the cluster's processes, slots and jobs")):
        c = commands.add_parser(name, help=text, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        c.add_argument("--cluster-dir", default=DEFAULT_DIR, metavar="DIR",
                       help="the cluster's configuration, logs and pids (environment: NGRAMFLOW_FLINK_CLUSTER)")
        c.set_defaults(handler=handler)
        if name == "up":
            c.add_argument("--taskmanagers", type=typed(int, "--taskmanagers"), default=1,
                           help="TaskManager processes to run")
            c.add_argument("--taskmanager-memory", default=DEFAULT_TASKMANAGER_MEMORY, metavar="SIZE",
                           help="total process memory of each TaskManager (RocksDB uses its managed part)")
            c.add_argument("--slots", type=typed(int, "--slots"), default=2, help="task slots per TaskManager")
        if name == "status":
            c.add_argument("--json", action="store_true", help="machine-readable output")
