"""Imports on real Apache Flink: the same dataset as the embedded runner, also across failures.

Every process here listens on 127.0.0.1 only and is stopped by its pid: the
job servers by the import that started them, the cluster's JobManager and
TaskManagers by the fixtures (or killed by the tests on purpose).
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from conftest import (NOT_TAGGED, SAMPLE, assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012,
                      reference_2020, run_cli)
from ngramflow.corpus import scale
from ngramflow.pipeline.flink import jvm, provision, rest
from ngramflow.pipeline.flink.cluster import SessionCluster, shares_disk
from ngramflow.schemas import layout
from ngramflow.transforms.sizing import (KEY_BUDGET_VARIABLE, PART_TOKENS_VARIABLE, RANGE_ROWS_VARIABLE,
                                        SPILL_BYTES_VARIABLE)

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Small enough that the test corpus's larger files are read in many slices.
SLICE_SIZE = "64k"
#: Key budgets small enough that the test corpora are merged under many keys, as corpora thousands of
#: times larger are under the real one: ~100 keys for the distinct-heavy corpus, ~60 for the kill tests'
#: (fewer there: every slice's table is split over all keys, and those tests read 64 KiB slices). Half
#: of what they were when a run's year set took 88 bytes: the keys follow the run tables' bytes.
SMALL_KEY_BUDGET = KILL_TEST_KEY_BUDGET = 1 << 18
#: JVMs started with this hand out other identity hash codes than by default (an incrementing sequence):
#: Beam's job server then fuses and translates a pipeline in another order, the way two job server
#: processes can (StableUidJobServer); a resumed job must still find all of its checkpoint's state.
OTHER_IDENTITY_HASHES = {"JAVA_TOOL_OPTIONS": "-XX:+UnlockExperimentalVMOptions -XX:hashCode=3"}
FILE_STAT_KEYS = ("path", "size", "format", "rows_read", "rows_rejected", "rows_filtered", "status")


@pytest.fixture(scope="session")
def flink_provisioned():
    """The job server classpath, its entry point and the Flink distribution, built on first use (Maven, javac,
    PyPI)."""
    started = time.time()
    provision.ensure_launcher()
    provision.ensure_dist()
    print(f"\nFlink provisioning took {time.time() - started:.1f} s")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """About 600,000 rows in ~450 files of 1- to 3-grams, with malformed rows (rejects must match too)."""
    from ngramflow.corpus.synthetic import generate

    out = tmp_path_factory.mktemp("flink-corpus")
    generate(out, rows=600_000, seed=7, orders=(1, 2, 3), formats=("2012",), malformed=5)
    return str(out / "2012")


@pytest.fixture(scope="module")
def sliced_files(corpus) -> int:
    """How many of the corpus's files checkpointed imports here read in slices (a precondition of the tests)."""
    from ngramflow.pipeline.inputs import expand_inputs
    from ngramflow.pipeline.option_fields import parse_size
    from ngramflow.transforms.units import pack_files

    units = pack_files(expand_inputs([corpus]).ngram_files, 1 << 30, parse_size(SLICE_SIZE, "slice"))
    sliced = {unit[0][0] for unit in units if unit[0][3] > 1}
    assert len(sliced) >= 20
    return len(sliced)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The embedded runner's dataset: what every Flink import must reproduce exactly."""
    return content(import_ok(corpus, tmp_path_factory.mktemp("direct") / "out"))


def content(dataset) -> dict:
    """Everything a dataset says, in a canonical order: all Parquet rows sorted, the manifest's counts."""
    def rows(folder, order):
        return duckdb.sql(f"SELECT * FROM read_parquet('{dataset}/{folder}/**/*.parquet', hive_partitioning=false) "
                          f"ORDER BY {order}").fetchall()

    manifest = json.load(open(os.path.join(dataset, "_manifest.json")))
    return {
        "ngrams": rows("ngrams", "ngram"),
        "vocabulary": rows("vocabulary", "id"),
        "rejects": rows("rejects", "file, line"),
        "inputs": [{k: s[k] for k in FILE_STAT_KEYS} for s in manifest["inputs"]],
        "orders": manifest["orders"],
        "rows_read": manifest["rows_read"],
        "rows_rejected": manifest["rows_rejected"],
    }


def assert_same_dataset(dataset, reference):
    ours = content(dataset)
    for part in reference:
        assert ours[part] == reference[part], f"{part} differs from the embedded runner's"
    assert len(ours["ngrams"]) > 10_000 and len(ours["rejects"]) == 5


def test_batch_and_checkpointed_flink_equal_the_embedded_runner(flink_provisioned, corpus, sliced_files, reference,
                                                               tmp_path):
    batch = import_ok(corpus, tmp_path / "batch", "--runner", "flink", "--workers", "2")
    assert_same_dataset(batch, reference)

    checkpointed = import_ok(corpus, tmp_path / "checkpointed", "--runner", "flink", "--mode", "checkpointed",
                             "--checkpoint-interval", "1", "--checkpoint-dir", tmp_path / "checkpoints",
                             "--slice-size", SLICE_SIZE, "--workers", "2")
    assert_same_dataset(checkpointed, reference)
    flink = json.load(open(tmp_path / "checkpointed" / "_manifest.json"))["flink"]
    assert flink["mode"] == "checkpointed" and flink["flink_master"] == "[local]"
    assert len(flink["checkpoints"]) >= 2, "checkpoints must complete while the import runs"
    assert 0 < flink["job_server_peak_rss_bytes"] < 2 * 2**30
    assert not os.path.exists(flink["checkpoint_dir"]), "a complete import leaves no checkpoints behind"


def test_bundled_sample_on_flink_matches_duckdb(flink_provisioned, tmp_path):
    """The README's sample imported with --runner flink as a user types it, against DuckDB over the same files."""
    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "out", "--runner", "flink")
    assert_same_rows(ngrams_of(dataset), reference_2012(gz_files(os.path.join(SAMPLE, "2012")), where=NOT_TAGGED))


@pytest.fixture(scope="module")
def distinct_heavy(tmp_path_factory):
    """corpus.scale's shape b: 2020 format, one line per 2-gram, 150,000 distinct 2-grams."""
    out = tmp_path_factory.mktemp("distinct-heavy")
    scale.generate(str(out), "b", 300_000, seed=5)
    return str(out)


def test_distinct_heavy_corpus_over_many_keys_equals_duckdb(flink_provisioned, distinct_heavy, tmp_path,
                                                           monkeypatch, capsys):
    """Batch mode totals through sorted run files into many n-gram ranges; checkpointed mode keeps each key's
    group within the budget however many keys the input needs, and cuts the totals into n-gram ranges by a
    sample sort. Both are exact, range-partitioned, and `ngramflow query` finds n-grams in any part file."""
    monkeypatch.setenv(KEY_BUDGET_VARIABLE, str(SMALL_KEY_BUDGET))
    part_tokens = 400
    monkeypatch.setenv(PART_TOKENS_VARIABLE, str(part_tokens))  # a vocabulary of many parts, numbered by a sample sort
    monkeypatch.setenv(SPILL_BYTES_VARIABLE, str(4 << 20))
    monkeypatch.setenv(RANGE_ROWS_VARIABLE, "10000")
    files = gz_files(distinct_heavy)
    reference = content(import_ok(distinct_heavy, tmp_path / "direct", "--pos", "keep"))
    for mode, options in (("batch", ()), ("checkpointed", ("--checkpoint-interval", "1", "--slice-size", "1m",
                                                            "--checkpoint-dir", tmp_path / "checkpoints"))):
        dataset = import_ok(distinct_heavy, tmp_path / mode, "--pos", "keep", "--runner", "flink", "--mode", mode,
                            "--workers", "2", *options)
        assert_same_rows(ngrams_of(dataset), reference_2020(files))
        ours = content(dataset)
        assert ours["vocabulary"] == reference["vocabulary"] and ours["orders"] == reference["orders"]
        manifest = json.load(open(os.path.join(dataset, "_manifest.json")))
        # About part_tokens tokens a part: checkpointed mode's sample sort cuts them near it (4K tokens: 9 parts of
        # about 455 with rank keys of 8 bytes and the token's, 10 with a byte more), batch mode's external sort at it.
        vocabulary_parts = [f for f in manifest["files"] if f.startswith(layout.VOCABULARY + "/part-0")]
        assert len(vocabulary_parts) >= len(ours["vocabulary"]) // (2 * part_tokens), "vocabulary parts"
        parts = [f for f in manifest["files"] if f.startswith(layout.ngrams_folder(2))]
        assert len(parts) == len(manifest["ranges"]["2"]) >= 10, "one part file per n-gram range"
        if mode == "batch":
            assert manifest["aggregation"]["run_files"] > 1
            detail = f"{len(parts)} n-gram ranges from {manifest['aggregation']['run_files']} run files"
        else:
            keys = manifest["aggregation"]["keys"]
            assert keys >= 80
            largest = manifest["flink"]["largest_key_bytes"]
            assert 0 < largest["ngram input bytes"] <= SMALL_KEY_BUDGET
            assert 0 < largest["range bytes"] <= SMALL_KEY_BUDGET
            detail = f"{keys} keys, {len(parts)} n-gram ranges, largest values per key {largest}"
        probes = ours["ngrams"][::len(ours["ngrams"]) // 20]  # (ngram, order, match, volume, ...), spread over parts
        capsys.readouterr()
        assert run_cli("query", dataset, "count", *[p[0] for p in probes], "--format", "json") == 0
        counts = [(r["ngram"], r["match_count"], r["volume_count"]) for r in json.loads(capsys.readouterr().out)]
        assert counts == [(p[0], p[2], p[3]) for p in probes]
        with capsys.disabled():
            print(f"\n{mode}: {detail}")


# --- faults on a standalone cluster ---------------------------------------------------------------


@pytest.fixture
def cluster(flink_provisioned, tmp_path, request):
    """A session cluster on this machine, whose jobs name their jars by path here (shared_disk), unless a test
    asks for one that receives them with each job, as a cluster on other machines does (indirect parameter
    False)."""
    cluster = SessionCluster(tmp_path / "cluster")
    cluster.up(taskmanagers=1, memory="2g", slots=2, shared_disk=getattr(request, "param", True))
    yield cluster
    cluster.down()


#: What a TaskManager logs for each jar of a job that it fetches from the JobManager's BLOB server.
_JAR_DOWNLOAD = re.compile(r"BlobClient\s.* - Downloading \w+/p-")


def assert_jars_came(cluster, by_path: bool) -> None:
    """The cluster's TaskManagers ran the job with no jar fetched from the BLOB server (BY_PATH: the import named
    them by their paths here), or with the job's jars fetched from it (uploaded); Flink's own logs say which."""
    logs = "".join(open(path).read() for path in glob.glob(os.path.join(cluster.log_dir, "taskmanager-*.log")))
    assert "Loading JAR files for task" in logs, "the TaskManagers ran the job"
    assert shares_disk(cluster.rest_address) == by_path
    downloaded = len(_JAR_DOWNLOAD.findall(logs))
    if by_path:
        assert downloaded == 0, f"{downloaded} jars uploaded to a cluster that reads them from this machine's disk"
    else:
        assert downloaded > 100, f"the job's jars were not uploaded ({downloaded} downloaded)"


def start_import(corpus, output, flink_master: str, checkpoints, *options, env=None) -> subprocess.Popen:
    """A checkpointed import as its own process (as a user runs it), checkpointing every second, its n-gram
    state spread over many keys; ``env``: more environment variables. Its temporary folders go beside OUTPUT:
    an import killed by a test cannot remove them."""
    scratch = os.path.join(os.path.dirname(str(output)), "tmp")
    os.makedirs(scratch, exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "ngramflow.cli", "import", corpus, "--output", str(output), "--quiet",
         "--runner", "flink", "--mode", "checkpointed", "--checkpoint-interval", "1",
         "--flink-master", flink_master, "--checkpoint-dir", str(checkpoints), "--slice-size", SLICE_SIZE,
         *options],
        cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # State spread over many keys, as a large corpus spreads it (sizing.merge_shards).
        env={**os.environ, "TMPDIR": scratch, KEY_BUDGET_VARIABLE: str(KILL_TEST_KEY_BUDGET), **(env or {})})


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)  # the CLI stops its job server on SIGTERM
        _, err = process.communicate(timeout=60)
        pytest.fail(f"the import did not end within {timeout} s:\n{err}")
    return process.returncode, err


def running_job(cluster, process, timeout: float = 180) -> str:
    """The id of the job the import submitted, once it runs."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert process.poll() is None, f"the import ended early: {process.communicate()[1]}"
        try:
            running = [j["jid"] for j in rest.jobs(cluster.rest_address) if j["state"] == "RUNNING"]
        except rest.RestUnavailable:  # a busy JobManager's REST answer can take longer than one request waits
            running = []
        if running:
            return running[0]
        time.sleep(0.5)
    pytest.fail("no job started on the cluster")


def wait_for_checkpoints(cluster, job: str, completed: int, timeout: float = 180) -> dict:
    """The job's checkpoint statistics once it has completed this many (a job being restarted has none: retried)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            stats = rest.checkpoints(cluster.rest_address, job)
            if stats["counts"]["completed"] >= completed:
                return stats
        except rest.RestUnavailable:
            pass
        time.sleep(0.2)
    pytest.fail(f"fewer than {completed} checkpoints completed within {timeout} s")


def assert_spread_over_many_keys(dataset) -> None:
    manifest = json.load(open(os.path.join(dataset, "_manifest.json")))
    assert manifest["aggregation"]["keys"] >= 40, "state spread over many keys"
    parts = [f for f in manifest["files"] if f.startswith(layout.ngrams_folder(2))]
    assert len(parts) == len(manifest["ranges"]["2"]) > 1, "one part file per n-gram range"


def assert_restored_with_exact_output(process, cluster, job: str, dataset, reference) -> None:
    """The import ends well, its job restarted from a checkpoint, and its dataset is the reference's."""
    code, err = finish(process)
    assert code == 0, err
    stats = rest.checkpoints(cluster.rest_address, job)
    assert stats["counts"]["restored"] >= 1, "the job must have restarted from a checkpoint"
    print(f"\ncheckpoints in all: {stats['counts']}")
    assert_same_dataset(dataset, reference)


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    jvm.stop(pid)  # reaps it


@pytest.mark.parametrize("cluster", [False], indirect=True, ids=["jars uploaded"])
def test_killed_taskmanager_restores_from_checkpoint_with_exact_output(corpus, sliced_files, reference, cluster,
                                                                      tmp_path):
    process = start_import(corpus, tmp_path / "out", cluster.rest_address, tmp_path / "checkpoints")
    job = running_job(cluster, process)
    before = wait_for_checkpoints(cluster, job, completed=1)
    assert rest.jobs(cluster.rest_address)[0]["state"] == "RUNNING", "the kill must hit a running job"
    (taskmanager,) = cluster.taskmanager_pids()
    kill(taskmanager)
    cluster.add_taskmanager()
    print(f"\nTaskManager killed after {before['counts']['completed']} completed checkpoints")

    assert_restored_with_exact_output(process, cluster, job, tmp_path / "out", reference)
    assert_spread_over_many_keys(tmp_path / "out")
    assert_jars_came(cluster, by_path=False)  # the new TaskManager fetched them again


def test_killed_cluster_resumes_from_retained_checkpoint_with_exact_output(corpus, sliced_files, reference, cluster,
                                                                         tmp_path):
    process = start_import(corpus, tmp_path / "out", cluster.rest_address, tmp_path / "checkpoints")
    job = running_job(cluster, process)
    started = time.time()
    wait_for_checkpoints(cluster, job, completed=1)
    assert rest.jobs(cluster.rest_address)[0]["state"] == "RUNNING", "the kill must hit a running job"
    for pid in cluster.taskmanager_pids() + [cluster.state()["jobmanager"]["pid"]]:
        kill(pid)
    print(f"\ncluster killed {time.time() - started:.1f} s into the job")

    killed = time.time()
    code, err = finish(process)
    print(f"the import failed {time.time() - started:.1f} s into the job")
    assert code == 1, f"the import must fail with its cluster (exit {code}):\n{err}"
    # Flink's REST client retries a refused connection (infra/flink/config.yaml: 5 tries, 2 s apart); with its
    # defaults (20 tries, 3 s apart) the import failed a minute after its cluster.
    assert time.time() - killed < 40, "the import must name its dead cluster within seconds"
    assert os.path.exists(tmp_path / "out" / "_INCOMPLETE")
    hint = re.search(r"resume with --resume-from (\S+)", err)
    assert hint, f"the failure must name the checkpoint to resume from:\n{err}"

    cluster.up(taskmanagers=1, memory="2g", slots=2)  # a fresh JobManager and TaskManager
    code, err = finish(start_import(corpus, tmp_path / "out", cluster.rest_address, tmp_path / "checkpoints",
                                    "--resume-from", hint.group(1), "--min-count", "2"))
    assert code == 2 and "belongs to an import with other options" in err, err
    code, err = finish(start_import(corpus, tmp_path / "out", cluster.rest_address, tmp_path / "checkpoints",
                                    "--resume-from", hint.group(1), env=OTHER_IDENTITY_HASHES))
    assert code == 0, err
    print(f"the resumed import finished {time.time() - started:.1f} s after the first started")
    manifest = json.load(open(tmp_path / "out" / "_manifest.json"))
    assert manifest["flink"]["resumed_from"] == hint.group(1)
    (job,) = rest.jobs(cluster.rest_address)  # the first submission maps the whole checkpoint
    assert job["state"] == "FINISHED", job
    assert rest.checkpoints(cluster.rest_address, job["jid"])["counts"]["restored"] == 1
    assert_same_dataset(tmp_path / "out", reference)
    assert_spread_over_many_keys(tmp_path / "out")
    assert_jars_came(cluster, by_path=True)  # to the fresh JobManager too


def job_servers_of(pid: int) -> list[int]:
    """The job server JVMs an import process started (their run folder ends with its pid)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if provision.LAUNCHER_CLASS.encode() in args and any(arg.endswith(f"-{pid}/conf".encode()) for arg in args):
            found.append(int(entry))
    return found


def test_killed_local_import_stops_its_jvm_and_resumes_with_exact_output(flink_provisioned, corpus, sliced_files,
                                                                         reference, tmp_path):
    """On [local] the cluster lives in the job server's JVM: a SIGKILL of the import (the OOM killer, kill -9)
    must not leave that JVM running, and the import resumes from the checkpoint it retained."""
    checkpoints = tmp_path / "checkpoints"
    process = start_import(corpus, tmp_path / "out", "[local]", checkpoints)
    deadline = time.time() + 240
    while not glob.glob(str(checkpoints / "*" / "*" / "chk-*" / "_metadata")):
        assert process.poll() is None and time.time() < deadline, "no checkpoint completed while the import ran"
        time.sleep(0.2)
    servers = job_servers_of(process.pid)
    assert len(servers) == 1, servers
    process.kill()
    process.communicate()
    deadline = time.time() + 60
    while jvm.alive(servers[0]) and time.time() < deadline:
        time.sleep(0.5)
    outlived = jvm.alive(servers[0])
    jvm.stop(servers[0])  # no process left behind, should the check fail
    assert not outlived, "the job server outlived the import that started it"
    assert os.path.exists(tmp_path / "out" / "_INCOMPLETE")

    (run,) = os.listdir(checkpoints)
    resumed = start_import(corpus, tmp_path / "out", "[local]", checkpoints, "--resume-from", str(checkpoints / run),
                           env=OTHER_IDENTITY_HASHES)
    code, err = finish(resumed)
    assert code == 0, err
    manifest = json.load(open(tmp_path / "out" / "_manifest.json"))
    assert manifest["flink"]["resumed_from"].startswith(str(checkpoints / run))
    (log,) = glob.glob(os.path.join(provision.FLINK_HOME, "runs", f"*-{resumed.pid}", "job-server.log"))
    assert "Restoring job" in open(log, errors="replace").read(), "the resumed job did not restore a checkpoint"
    assert_same_dataset(tmp_path / "out", reference)
