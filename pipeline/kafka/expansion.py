"""Beam's Java expansion service for KafkaIO, as a child process of one import, on 127.0.0.1 only."""

import os

from ngramflow.pipeline.flink import jvm
from ngramflow.pipeline.flink.provision import ensure_job_server, ensure_launcher, java_classpath
from ngramflow.pipeline.kafka.provision import EXPANSION_SOURCE, ensure_expansion_service
#: How KafkaIO is expanded, and why:
#: - use_deprecated_read: a Read of KafkaIO's unbounded source, which Flink runs itself, with the topic's
#:   offsets in its checkpoints (the default expansion, a splittable DoFn, needs a Java SDK harness);
#: - EMBEDDED: KafkaIO's few Java steps (dropping Kafka's metadata) run inside the TaskManager's JVM
#:   (the default environment is a Docker container of Beam's Java SDK, and there is no Docker here).
#: And, added at launch, --filesToStage of this service's own jar: the artifacts that environment declares.
#: By default every jar of this service's classpath (209, 234 MB), which the import fetched from it and staged
#: to the job server at each submission, for nothing: the job server gives the job its own classpath, KafkaIO's
#: jars among it (uploaded with the job, or named by path: pipeline/flink/job_server.py).
OPTIONS = ("--experiments=use_deprecated_read", "--defaultEnvironmentType=EMBEDDED")


class ExpansionService:
    """``with ExpansionService(connector, log_path) as service:`` ``service.address`` expands ReadFromKafka."""

    def __init__(self, connector: str, log_path: str):
        self.connector, self.log_path = connector, log_path
        self.port, self.process = None, None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self):
        own = ensure_expansion_service()
        classpath = os.pathsep.join(java_classpath([own, ensure_launcher(), ensure_job_server(), self.connector]))

        def launch(ports):
            command = [jvm.java(), *jvm.java17_flags(), "-cp", classpath, EXPANSION_SOURCE.removesuffix(".java"),
                       str(ports[0]), *OPTIONS, f"--filesToStage={own}"]
            self.process = jvm.start(command, self.log_path, tied=True)
            return self.process

        try:
            _, (self.port,) = jvm.start_on_free_ports(1, launch, self.log_path, "Beam's expansion service for KafkaIO",
                                                      timeout=180)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.process is not None:
            jvm.stop(self.process.pid)
            self.process = None
