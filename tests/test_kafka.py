"""The corpus queue on real parts: a Kafka broker from `ngramflow kafka up`, a Flink session cluster, imports
that read the topic while files are published, and faults (a killed TaskManager, a restarted broker, every
file published twice). Each dataset must equal the batch import of the same files exactly.

Every process listens on 127.0.0.1 and is stopped by its pid; the broker's and the cluster's fixtures check
that none is left behind.
"""

import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import import_ok, run_cli
from ngramflow.corpus import queue
from ngramflow.pipeline.flink import jvm, provision, rest
from ngramflow.pipeline.flink.cluster import SessionCluster
from ngramflow.pipeline.kafka import provision as kafka_provision
from ngramflow.pipeline.kafka.broker import Broker
from test_flink import (assert_restored_with_exact_output, assert_same_dataset, content, finish, kill, running_job,
                        wait_for_checkpoints)

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLICE_SIZE = "64k"


@pytest.fixture(scope="module")
def provisioned():
    """The broker's jars, KafkaIO, the job server and Flink: built on first use (Maven Central, PyPI)."""
    started = time.time()
    kafka_provision.ensure_broker()
    kafka_provision.ensure_expansion_service()  # and KafkaIO's jars
    provision.ensure_dist()
    print(f"\nKafka and Flink provisioning took {time.time() - started:.1f} s")


def listening_addresses(pid: int) -> set[str]:
    """The local addresses the process listens on (TCP), from /proc."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(table) as fh:
            for line in list(fh)[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    raw = bytes.fromhex(fields[1].split(":")[0])
                    if family == socket.AF_INET:
                        found.add(socket.inet_ntop(family, raw[::-1]))
                    else:  # four little-endian words
                        words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                        found.add(socket.inet_ntop(family, words))
    return found


@pytest.fixture(scope="module")
def broker(provisioned, tmp_path_factory):
    broker = Broker(tmp_path_factory.mktemp("broker"))
    broker.up()
    yield broker
    pid = broker.state()["pid"]
    broker.down()
    assert not jvm.alive(pid), "kafka down leaves no process"


@pytest.fixture(scope="module")
def cluster(provisioned, tmp_path_factory):
    cluster = SessionCluster(tmp_path_factory.mktemp("cluster"))
    cluster.up(taskmanagers=1, memory="2g", slots=2)
    yield cluster
    cluster.down()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """About 150,000 rows in ~220 files of 1- to 3-grams, with malformed rows; the larger files are read in
    many 64 KiB slices."""
    from ngramflow.corpus.synthetic import generate

    out = tmp_path_factory.mktemp("kafka-corpus")
    generate(out, rows=150_000, seed=3, orders=(1, 2, 3), formats=("2012",), malformed=5)
    folder = out / "2012"
    return sorted(str(folder / name) for name in os.listdir(folder) if name.endswith(".gz"))


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The batch import of the same files: what every import from the queue must reproduce exactly."""
    return content(import_ok(corpus, tmp_path_factory.mktemp("batch") / "out"))


def topic(broker, name: str) -> str:
    return f"kafka://{broker.bootstrap}/{name}"


def publish(address: str, files, *options) -> None:
    assert run_cli("corpus", "publish", *files, "--to", address, *options) == 0


def start_import(address: str, output, cluster, checkpoints, *options) -> subprocess.Popen:
    """A checkpointed import of the queue as its own process, as a user runs it, checkpointing every second."""
    return subprocess.Popen(
        [sys.executable, "-m", "ngramflow.cli", "import", "--from-kafka", address, "--output", str(output),
         "--quiet", "--runner", "flink", "--mode", "checkpointed", "--checkpoint-interval", "1",
         "--flink-master", cluster.rest_address, "--checkpoint-dir", str(checkpoints), "--slice-size", SLICE_SIZE,
         "--queue-input-size", "16m", "--workers", "2", *options],
        cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def thirds(files):
    return files[0::3], files[1::3], files[2::3]


# --- the broker and the command line ---------------------------------------------------------------


def test_kafka_up_status_down_on_loopback(provisioned, tmp_path, capsys):
    folder = str(tmp_path / "broker")
    started = time.time()
    assert run_cli("kafka", "up", "--broker-dir", folder) == 0
    print(f"\nbroker up in {time.time() - started:.1f} s")
    capsys.readouterr()
    assert run_cli("kafka", "status", "--broker-dir", folder) == 0
    bootstrap = capsys.readouterr().out.strip()
    host, port = bootstrap.split(":")
    pid = Broker(folder).state()["pid"]
    assert host == "127.0.0.1" and listening_addresses(pid) <= {"127.0.0.1", "::ffff:127.0.0.1"}
    assert len(listening_addresses(pid)) >= 1

    assert run_cli("kafka", "down", "--broker-dir", folder) == 0
    assert not jvm.alive(pid)
    assert run_cli("kafka", "status", "--broker-dir", folder) == 3
    assert run_cli("kafka", "up", "--broker-dir", folder) == 0  # again: same port, same data
    assert Broker(folder).bootstrap == bootstrap
    assert run_cli("kafka", "down", "--broker-dir", folder, "--purge") == 0
    assert not os.path.exists(folder)


def test_from_kafka_on_the_embedded_runner_is_refused_in_one_line(tmp_path, capsys):
    assert run_cli("import", "--from-kafka", "kafka://127.0.0.1:9/t", "--output", tmp_path / "out") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--runner flink" in err, err
    assert run_cli("corpus", "publish", tmp_path, "--to", "kafka:/t") == 2
    assert "kafka://HOST:PORT/TOPIC" in capsys.readouterr().err


def test_publishing_is_idempotent_and_a_name_is_one_file(broker, corpus, tmp_path):
    address = topic(broker, "idempotent")
    publish(address, corpus[:3])
    publish(address, corpus[:3], "--end-of-corpus")
    messages = queue.read_topic(queue.QueueAddress.parse(address, "test"))
    assert [m["type"] for m in messages] == ["file"] * 6 + ["end"]
    assert messages[-1]["files"] == 3 and len(queue.distinct_files(messages)) == 3
    first = messages[0]
    assert first["name"] == os.path.basename(corpus[0]) and first["size"] == os.path.getsize(corpus[0])
    assert first["format"] == "2012" and first["order"] in (1, 2, 3) and len(first["sha256"]) == 64

    other = tmp_path / first["name"]  # another file under the same name
    other.write_bytes(open(corpus[1], "rb").read())
    publish(address, [str(other)])
    with pytest.raises(Exception, match="two different files named"):
        queue.distinct_files(queue.read_topic(queue.QueueAddress.parse(address, "test")))


# --- imports from the queue on a real cluster ------------------------------------------------------


def test_import_follows_the_queue_while_files_arrive_each_twice(broker, cluster, corpus, reference, tmp_path):
    """Started on an empty topic; three batches published while it runs, every file twice; then the marker."""
    address, events = topic(broker, "batches"), topic(broker, "batches-events")
    started = time.time()
    process = start_import(address, tmp_path / "out", cluster, tmp_path / "checkpoints", "--events", events)
    job = running_job(cluster, process)
    for batch in thirds(corpus):
        publish(address, batch)
        publish(address, batch)  # every file twice: counted once
        time.sleep(2)
    wait_for_checkpoints(cluster, job, completed=2)
    publish(address, [], "--end-of-corpus")
    code, err = finish(process)
    assert code == 0, err
    print(f"\nimport from the queue: {time.time() - started:.1f} s, "
          f"checkpoints {rest.checkpoints(cluster.rest_address, job)['counts']}")
    assert_same_dataset(tmp_path / "out", reference)

    # The run events: every file done with its rows, progress up to all files, the summary last.
    messages = queue.read_topic(queue.QueueAddress.parse(events, "test"))
    done = {m["path"]: m for m in messages if m["type"] == "file_done"}
    assert sorted(done) == sorted(corpus)
    assert sum(m["rows_read"] for m in done.values()) == reference["rows_read"]
    assert max(m["files_done"] for m in messages if m["type"] == "progress") >= len(corpus)
    assert messages[-1]["type"] == "summary" and messages[-1]["rows_read"] == reference["rows_read"]


def test_killed_taskmanager_restores_offsets_and_counts_exactly(broker, cluster, corpus, reference, tmp_path):
    address = topic(broker, "taskmanager-killed")
    process = start_import(address, tmp_path / "out", cluster, tmp_path / "checkpoints")
    job = running_job(cluster, process)
    first, second, third = thirds(corpus)
    publish(address, first + second)
    wait_for_checkpoints(cluster, job, completed=3)
    (taskmanager,) = cluster.taskmanager_pids()
    kill(taskmanager)
    cluster.add_taskmanager()
    publish(address, third, "--end-of-corpus")
    assert_restored_with_exact_output(process, cluster, job, tmp_path / "out", reference)


def test_broker_stopped_and_restarted_mid_run(broker, cluster, corpus, reference, tmp_path):
    address = topic(broker, "broker-restarted")
    process = start_import(address, tmp_path / "out", cluster, tmp_path / "checkpoints")
    job = running_job(cluster, process)
    first, second, third = thirds(corpus)
    publish(address, first)
    wait_for_checkpoints(cluster, job, completed=2)
    (pid,) = broker.down()
    assert not jvm.alive(pid)
    time.sleep(5)  # the job runs on without its broker
    assert process.poll() is None
    broker.up()
    publish(address, second + third, "--end-of-corpus")
    code, err = finish(process)
    assert code == 0, err
    assert_same_dataset(tmp_path / "out", reference)


def test_another_file_under_a_counted_name_fails_the_run_in_one_line(broker, cluster, corpus, tmp_path):
    address = topic(broker, "conflict")
    publish(address, corpus[:2])
    impostor = tmp_path / os.path.basename(corpus[0])  # same name, other content
    impostor.write_bytes(open(corpus[2], "rb").read())
    publish(address, [str(impostor)])
    process = start_import(address, tmp_path / "out", cluster, tmp_path / "checkpoints")
    code, err = finish(process)
    assert code == 1, err
    assert err.startswith("ngramflow: run failed: two different files named " + impostor.name), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert os.path.exists(tmp_path / "out" / "_INCOMPLETE")
