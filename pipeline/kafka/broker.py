"""A local Apache Kafka broker: one JVM in KRaft mode (broker and controller in one process), on 127.0.0.1.

For development and tests; a cluster uses a managed or self-managed Kafka instead (README, "Importing from
a Kafka queue"). Everything lives in one folder:

    BROKER_DIR/server.properties   listeners on 127.0.0.1 only, replication factors 1
    BROKER_DIR/data/               the log (topics), formatted once with a cluster id
    BROKER_DIR/kafka.log           the broker's log
    BROKER_DIR/broker.json         pid, ports, cluster id; `down` stops exactly this pid

`up` after `down` starts the broker again on the same ports with the same data, so clients (a running
import, a publisher) reconnect to it as to a restarted server.
"""

import shutil
import os
import subprocess

from ngramflow.errors import RunFailed, UserError
from ngramflow.pipeline.flink import jvm
from ngramflow.pipeline.kafka.provision import INFRA, KAFKA_HOME, ensure_broker

DEFAULT_DIR = os.environ.get("NGRAMFLOW_KAFKA_BROKER", os.path.join(KAFKA_HOME, "broker-local"))
MAIN, STORAGE_TOOL = "kafka.Kafka", "kafka.tools.StorageTool"
#: Enough for a queue of file references; the broker's page cache does the rest.
HEAP = "-Xmx512m"


def _properties(folder: str, port: int, controller_port: int) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": 1,
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": os.path.join(folder, "data"),
        "num.partitions": 1,
        # One node: every internal topic (consumer offsets, the producer-id and transaction state that
        # idempotent producers use) has one replica.
        "offsets.topic.replication.factor": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class Broker:
    def __init__(self, folder: str = DEFAULT_DIR):
        self.folder = os.path.abspath(folder)
        self.state_path = os.path.join(self.folder, "broker.json")
        self.properties = os.path.join(self.folder, "server.properties")
        self.log_path = os.path.join(self.folder, "kafka.log")

    def state(self) -> dict | None:
        return jvm.load_state(self.state_path)

    def _save(self, state: dict) -> None:
        jvm.save_state(self.state_path, state)

    def alive(self) -> bool:
        state = self.state()
        return bool(state and state.get("pid")) and jvm.alive(state["pid"])

    @property
    def bootstrap(self) -> str:
        state = self.state()
        if state is None:
            raise UserError(f"no Kafka broker in {self.folder}; start one with 'ngramflow kafka up'")
        return f"127.0.0.1:{state['port']}"

    def up(self) -> dict:
        """Start the broker unless it runs; a broker started here before keeps its ports and data."""
        if self.alive():
            return self.status()
        lib = ensure_broker()
        state = self.state() or {}
        if "cluster_id" not in state:
            state = {"port": jvm.free_port(), "controller_port": jvm.free_port(),
                     "cluster_id": self._tool(lib, "random-uuid").strip()}
            os.makedirs(self.folder, exist_ok=True)
            with open(self.properties, "w") as fh:
                fh.write(_properties(self.folder, state["port"], state["controller_port"]))
            self._tool(lib, "format", "-t", state["cluster_id"], "-c", self.properties)
        state["pid"] = jvm.start(self._command(lib, MAIN, self.properties), self.log_path).pid
        self._save(state)
        jvm.wait_for_port(state["port"], state["pid"], self.log_path, "the Kafka broker")
        return self.status()

    def down(self, purge: bool = False) -> list[int]:
        """Stop the recorded pid (and only it); ``purge`` also deletes the topics and the folder's state."""
        state = self.state() or {}
        stopped = [state["pid"]] if state.get("pid") and jvm.alive(state["pid"]) else []
        for pid in stopped:
            jvm.stop(pid)
        if purge:
            shutil.rmtree(self.folder, ignore_errors=True)
        elif state:
            state["pid"] = None
            self._save(state)
        return stopped

    def status(self) -> dict:
        state = self.state()
        if state is None:
            return {"running": False, "folder": self.folder}
        return {"running": self.alive(), "folder": self.folder, "bootstrap": f"127.0.0.1:{state['port']}",
                "pid": state.get("pid"), "log": self.log_path, "data": os.path.join(self.folder, "data")}

    def _command(self, lib: str, main: str, *args: str) -> list[str]:
        return [jvm.java(), HEAP, f"-Dkafka.logs.dir={self.folder}", f"-Dkafka.logs.file={self.log_path}",
                f"-Dlog4j.configuration=file:{os.path.join(INFRA, 'log4j.properties')}",
                "-cp", os.path.join(lib, "*"), main, *args]

    def _tool(self, lib: str, *args: str) -> str:
        done = subprocess.run(self._command(lib, STORAGE_TOOL, *args), capture_output=True, text=True)
        if done.returncode != 0:
            raise RunFailed(f"Kafka's StorageTool {args[0]} failed: {(done.stdout + done.stderr).strip()[-500:]}")
        return done.stdout
