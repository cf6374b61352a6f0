"""A local Flink session cluster: one JobManager and N TaskManagers, each its own JVM.

Started without Flink's shell scripts: the entry-point classes of flink-dist,
with the memory flags that Flink's BashJavaUtils derives from the
configuration (as the scripts do). Everything lives in one folder:

    CLUSTER_DIR/conf/config.yaml   infra/flink/config.yaml + ports, memory, folders, and the
                                   folder itself (FOLDER_KEY): imports name their jars by path
    CLUSTER_DIR/log/               jobmanager.log, taskmanager-N.log
    CLUSTER_DIR/cluster.json       pids and ports; `down` stops exactly these pids
"""

import os
import shutil
import subprocess
import time

from ngramflow.errors import RunFailed, UserError
from ngramflow.pipeline.flink import config, jvm, rest
from ngramflow.pipeline.flink.options import DEFAULT_TASKMANAGER_MEMORY, TASKMANAGER_MEMORY
from ngramflow.pipeline.flink.provision import FLINK_HOME, ensure_dist

DEFAULT_DIR = os.environ.get("NGRAMFLOW_FLINK_CLUSTER", os.path.join(FLINK_HOME, "cluster"))
JOBMANAGER = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
BASH_JAVA_UTILS = "org.apache.flink.runtime.util.bash.BashJavaUtils"
_RESULT = "BASH_JAVA_UTILS_EXEC_RESULT:"
#: In the configuration of a session cluster that reads jobs' jars from this machine's disk: its folder.
FOLDER_KEY = "ngramflow.cluster-folder"


def shares_disk(flink_master: str) -> bool:
    """Whether the cluster at FLINK_MASTER (host:port) is a session cluster ngramflow started here to read jobs'
    jars from this machine's disk (SessionCluster.up): its JobManager names its folder, and the folder's record
    holds that JobManager, running, at that port. Any other cluster receives the jars with each job."""
    try:
        folder = rest.jobmanager_config(flink_master).get(FOLDER_KEY)
    except rest.RestUnavailable:
        return False
    if not folder:
        return False
    cluster = SessionCluster(folder)
    state = cluster.state()
    return bool(state) and cluster.jobmanager_alive() and flink_master.rpartition(":")[2] == str(state["rest_port"])


class SessionCluster:
    def __init__(self, folder: str = DEFAULT_DIR):
        self.folder = os.path.abspath(folder)
        self.conf_dir = os.path.join(self.folder, "conf")
        self.log_dir = os.path.join(self.folder, "log")
        self.state_path = os.path.join(self.folder, "cluster.json")

    # --- state -------------------------------------------------------------------------------

    def state(self) -> dict | None:
        return jvm.load_state(self.state_path)

    def _save(self, state: dict) -> None:
        jvm.save_state(self.state_path, state)

    @property
    def rest_address(self) -> str:
        state = self.state()
        if state is None:
            raise UserError(f"no Flink cluster in {self.folder}; start one with 'ngramflow flink up'")
        return f"127.0.0.1:{state['rest_port']}"

    def jobmanager_alive(self) -> bool:
        state = self.state()
        return bool(state) and jvm.alive(state["jobmanager"]["pid"])

    def taskmanager_pids(self) -> list[int]:
        """Pids of the TaskManagers started here that are still running."""
        state = self.state() or {"taskmanagers": []}
        return [tm["pid"] for tm in state["taskmanagers"] if jvm.alive(tm["pid"])]

    # --- life cycle --------------------------------------------------------------------------

    def up(self, taskmanagers: int = 1, memory: str = DEFAULT_TASKMANAGER_MEMORY, slots: int = 2,
           shared_disk: bool = True) -> dict:
        """Start whatever is not running: the JobManager, then TaskManagers until ``taskmanagers`` run.

        ``shared_disk``: the JobManager started here lets imports name their jars by path on this machine, which
        its processes all run on (shares_disk), instead of sending them with each job (about 230 MB, 16-22 s
        of Flink's upload and storage per submission); False: jobs bring their jars, as to a cluster on other
        machines."""
        if taskmanagers < 1 or slots < 1:
            raise UserError("a cluster needs at least one TaskManager with at least one slot")
        dist = ensure_dist()
        if not self.jobmanager_alive():
            self._stop_recorded()
            self._start_jobmanager(dist, TASKMANAGER_MEMORY.bytes("--taskmanager-memory", memory), slots, shared_disk)
        missing = taskmanagers - len(self.taskmanager_pids())
        for _ in range(missing):
            self._start_taskmanager(dist)
        self._wait_for_taskmanagers(taskmanagers)
        return self.status()

    def add_taskmanager(self) -> int:
        """Start one more TaskManager (e.g. to replace a lost one); its pid."""
        if not self.jobmanager_alive():
            raise UserError(f"no running Flink cluster in {self.folder}; start one with 'ngramflow flink up'")
        expected = len(self.taskmanager_pids()) + 1
        pid = self._start_taskmanager(ensure_dist())
        self._wait_for_taskmanagers(expected)
        return pid

    def down(self) -> list[int]:
        """Stop every process recorded in cluster.json (and only those); the pids stopped."""
        stopped = self._stop_recorded()
        if os.path.exists(self.state_path):
            os.remove(self.state_path)
        return stopped

    def status(self) -> dict:
        state = self.state()
        if state is None:
            return {"running": False, "folder": self.folder}
        report = {
            "running": self.jobmanager_alive(),
            "folder": self.folder,
            "rest_address": f"127.0.0.1:{state['rest_port']}",
            "web_ui": f"http://127.0.0.1:{state['rest_port']}",
            "logs": self.log_dir,
            "taskmanager_memory": state["taskmanager_memory"],
            "jobmanager_pid": state["jobmanager"]["pid"],
            "taskmanager_pids": self.taskmanager_pids(),
        }
        if report["running"]:
            try:
                overview = rest.overview(report["rest_address"])
                report.update(registered_taskmanagers=overview["taskmanagers"], slots=overview["slots-total"],
                              jobs_running=overview["jobs-running"])
            except rest.RestUnavailable as err:
                report["rest_error"] = str(err)
        return report

    # --- processes ---------------------------------------------------------------------------

    def _stop_recorded(self) -> list[int]:
        state = self.state()
        if state is None:
            return []
        pids = [tm["pid"] for tm in state["taskmanagers"]] + [state["jobmanager"]["pid"]]
        stopped = [pid for pid in pids if jvm.alive(pid)]
        for pid in stopped:
            jvm.stop(pid)
        return stopped

    def _start_jobmanager(self, dist: str, memory: int, slots: int, shared_disk: bool) -> None:
        log_path = os.path.join(self.log_dir, "jobmanager.log")

        def launch(ports):
            rest_port, rpc_port = ports
            shutil.rmtree(self.conf_dir, ignore_errors=True)
            tmp = os.path.join(self.folder, "tmp")
            config.write_conf_dir(self.conf_dir, {
                "rest.port": rest_port,
                "jobmanager.rpc.port": rpc_port,
                "taskmanager.memory.process.size": f"{memory}b",
                "taskmanager.numberOfTaskSlots": slots,
                "io.tmp.dirs": tmp,
                "web.tmpdir": os.path.join(tmp, "web"),
                "blob.storage.directory": os.path.join(tmp, "blobs"),
                **({FOLDER_KEY: self.folder} if shared_disk else {}),
            })
            process = jvm.start(self._command(dist, "GET_JM_RESOURCE_PARAMS", JOBMANAGER, log_path), log_path)
            # Recorded before it listens: `down` stops it even if it never does.
            self._save({"jobmanager": {"pid": process.pid, "log": log_path}, "rest_port": rest_port,
                        "rpc_port": rpc_port, "taskmanager_memory": memory, "slots": slots, "taskmanagers": []})
            return process

        jvm.start_on_free_ports(2, launch, log_path, "the Flink JobManager")

    def _start_taskmanager(self, dist: str) -> int:
        state = self.state()
        log_path = os.path.join(self.log_dir, f"taskmanager-{len(state['taskmanagers']) + 1}.log")
        process = jvm.start(self._command(dist, "GET_TM_RESOURCE_PARAMS", TASKMANAGER, log_path), log_path)
        state["taskmanagers"].append({"pid": process.pid, "log": log_path})
        self._save(state)
        return process.pid

    def _wait_for_taskmanagers(self, count: int, timeout: float = 90) -> None:
        address = self.rest_address
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if rest.overview(address)["taskmanagers"] >= count:
                    return
            except rest.RestUnavailable:
                pass
            time.sleep(0.3)
        raise RunFailed(f"{count} TaskManager(s) did not register with the JobManager within {timeout:.0f} s; "
                        f"see the logs in {self.log_dir}")

    def _command(self, dist: str, resource_query: str, entry_point: str, log_path: str) -> list[str]:
        classpath = os.path.join(dist, "lib", "*")
        jvm_flags, dynamic = self._resource_params(dist, resource_query)
        return [jvm.java(), *jvm.java17_flags(), *jvm_flags, f"-Dlog.file={log_path}",
                f"-Dlog4j.configurationFile=file:{os.path.join(self.conf_dir, 'log4j.properties')}",
                "-cp", classpath, entry_point, "--configDir", self.conf_dir, *dynamic]

    def _resource_params(self, dist: str, query: str) -> tuple[list[str], list[str]]:
        """JVM memory flags and -D settings for a JobManager/TaskManager, as Flink's scripts compute them."""
        classpath = os.pathsep.join([os.path.join(dist, "bin", "bash-java-utils.jar"), os.path.join(dist, "lib", "*")])
        done = subprocess.run([jvm.java(), "-cp", classpath, BASH_JAVA_UTILS, query, "--configDir", self.conf_dir],
                              capture_output=True, text=True)
        results = [line[len(_RESULT):] for line in done.stdout.splitlines() if line.startswith(_RESULT)]
        if done.returncode != 0 or len(results) < 2:
            raise RunFailed(f"Flink rejected the memory configuration in {self.conf_dir}: "
                            f"{(done.stdout + done.stderr).strip().splitlines()[-1:]}")
        return results[-2].split(), results[-1].split()
