"""Beam's Flink job server as a child process of one import, and the Python worker it talks to."""

import os
from concurrent import futures

import grpc
from apache_beam.portability.api import beam_fn_api_pb2_grpc
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer

from ngramflow.pipeline.flink import jvm
from ngramflow.pipeline.flink.provision import LAUNCHER_CLASS, ensure_job_server, ensure_launcher, java_classpath


class LoopbackWorkerPool:
    """Beam's LOOPBACK environment, bound to 127.0.0.1 instead of every interface.

    SDK harnesses run as threads of this process, so the TaskManagers must be
    on this machine; remote clusters use an EXTERNAL worker pool instead.
    """

    def __init__(self):
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(
            BeamFnExternalWorkerPoolServicer(), self.server)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop(grace=None)


class JobServer:
    """Beam's FlinkJobServerDriver on free 127.0.0.1 ports, submitting to ``flink_master``, started through
    LAUNCHER_CLASS: a resumed streaming job finds all of its checkpoint's state, and the JVM does not outlive
    this process (see its source).

    ``classpath``: more folders of jars (e.g. Beam's KafkaIO): the driver gives the job its whole classpath,
    uploaded with it or named by path, so the TaskManagers run those transforms without installing anything.
    ``jars_on_this_machine``: the cluster reads this machine's disk (its TaskManagers and JobManager run
    here), so the job names the jars by their paths instead of uploading them (16-22 s a submission).
    """

    def __init__(self, flink_master: str, conf_dir: str, log_path: str, heap_flags=(), classpath=(),
                 jars_on_this_machine: bool = False):
        self.flink_master, self.conf_dir, self.log_path = flink_master, conf_dir, log_path
        self.heap_flags, self.classpath = list(heap_flags), list(classpath)
        self.jars_on_this_machine = jars_on_this_machine
        self.process, self.job_port = None, None
        self.peak_rss = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.job_port}"

    def start(self) -> None:
        launcher, lib = ensure_launcher(), ensure_job_server()
        artifacts = os.path.join(os.path.dirname(self.log_path), "artifacts")
        classpath = os.pathsep.join(java_classpath([launcher, lib, *self.classpath]))

        def launch(ports):
            job_port, artifact_port, expansion_port = ports
            command = [jvm.java(), *jvm.java17_flags(), *self.heap_flags, "-cp", classpath, LAUNCHER_CLASS,
                       "--job-host=127.0.0.1", f"--job-port={job_port}", f"--artifact-port={artifact_port}",
                       f"--expansion-port={expansion_port}", f"--artifacts-dir={artifacts}",
                       f"--flink-master={self.flink_master}", f"--flink-conf-dir={self.conf_dir}",
                       *(["--jars-on-this-machine"] if self.jars_on_this_machine else [])]
            self.process = jvm.start(command, self.log_path, tied=True)
            return self.process

        try:
            _, (self.job_port, _, _) = jvm.start_on_free_ports(3, launch, self.log_path, "the Flink job server")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.process is not None:
            self.peak_rss = jvm.peak_rss_bytes(self.process.pid)
            jvm.stop(self.process.pid)
            self.process = None
