"""The Java side of Kafka, assembled by Maven from Maven Central once and cached (see ../shared/PLATFORM.md):

- the broker: kafka_2.13 and its dependencies (infra/kafka/broker-pom.xml), for `ngramflow kafka up`;
- the connector: Beam's KafkaIO and the Kafka client (infra/kafka/connector-pom.xml), added to the Flink
  job server's classpath and to the expansion service that expands Python's ReadFromKafka. Only the jars
  the job server does not already have are kept, so one version of each library is on the classpath;
- that expansion service (infra/kafka/LoopbackExpansionService.java), compiled with the JDK's javac.

Both land under KAFKA_HOME (default ~/.cache/ngramflow/kafka, environment NGRAMFLOW_KAFKA_HOME).
"""

import importlib.resources
import os
import re

from ngramflow.pipeline.flink.provision import compiled_java, ensure_job_server, ensure_launcher, maven_classpath

INFRA = str(importlib.resources.files("ngramflow.pipeline.kafka.infra"))
KAFKA_HOME = os.environ.get("NGRAMFLOW_KAFKA_HOME",
                            os.path.join(os.path.expanduser("~"), ".cache", "ngramflow", "kafka"))
_VERSIONED_JAR = re.compile(r"-\d[\w.\-]*\.jar$")


def _quiet(_message: str) -> None:
    pass


def ensure_broker(log=_quiet) -> str:
    """The broker's lib folder (kafka.Kafka, kafka.tools.StorageTool), assembled first if needed."""
    return maven_classpath(os.path.join(INFRA, "broker-pom.xml"), os.path.join(KAFKA_HOME, "broker"),
                           "the Kafka broker", log)


def _artifact(jar: str) -> str:
    return _VERSIONED_JAR.sub("", jar)


def ensure_connector(log=_quiet) -> str:
    """A folder of the jars KafkaIO adds to the job server's classpath, assembled first if needed."""
    job_server = ensure_job_server(log)
    lib = maven_classpath(os.path.join(INFRA, "connector-pom.xml"), os.path.join(KAFKA_HOME, "connector"),
                          "Beam's KafkaIO", log)
    present = {_artifact(jar) for jar in os.listdir(job_server)}
    for jar in os.listdir(lib):
        if _artifact(jar) in present:  # the job server's own version stays the only one
            os.remove(os.path.join(lib, jar))
    return lib


EXPANSION_SOURCE = "LoopbackExpansionService.java"


def ensure_expansion_service(log=_quiet) -> str:
    """The jar of LoopbackExpansionService (infra/kafka), compiled once against the job server's (and its entry
    point's) and KafkaIO's jars: each import then starts it without compiling it again."""
    return compiled_java(os.path.join(INFRA, EXPANSION_SOURCE),
                         [ensure_launcher(log), ensure_job_server(log), ensure_connector(log)],
                         os.path.join(KAFKA_HOME, "expansion-service"), "the expansion service for KafkaIO", log)
