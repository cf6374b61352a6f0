"""The corpus queue: a Kafka topic of verified corpus files, one message per file, then an end marker.

A message is keyed by the file's name and its value is JSON:

    {"type": "file", "name": ..., "uri": ..., "size": ..., "sha256": ..., "format": ..., "order": ...}
    {"type": "end", "files": N}        N: the distinct files published to the topic before it

A file is identified by its name and checksum: publishing it again is harmless (the importer counts it
once), and a file of the same name with another checksum is a conflict the importer refuses. The topic
has one partition, so the marker comes after every file published before it, in the order published.
Publishing uses an idempotent producer (a retried send is stored once).
"""

import hashlib
import json
import os
import re
from dataclasses import dataclass

from ngramflow.errors import RunFailed, UserError

SCHEME = "kafka://"
_ADDRESS = re.compile(r"kafka://([\w.\-]+:\d{1,5}(?:,[\w.\-]+:\d{1,5})*)/([A-Za-z0-9._\-]{1,249})")
FILE, END = "file", "end"
#: The end marker's key: no file has an empty name.
END_KEY = ""
#: Kafka's own limits on a delivery, in seconds: a broker that stays away longer fails the publication.
DELIVERY_TIMEOUT = 120


@dataclass(frozen=True)
class QueueAddress:
    """kafka://HOST:PORT[,HOST:PORT...]/TOPIC"""

    bootstrap: str
    topic: str

    @classmethod
    def parse(cls, text: str, flag: str) -> "QueueAddress":
        found = _ADDRESS.fullmatch(text or "")
        if not found:
            raise UserError(f"{flag} takes kafka://HOST:PORT/TOPIC, got {text!r}")
        return cls(found.group(1), found.group(2))

    def __str__(self) -> str:
        return f"{SCHEME}{self.bootstrap}/{self.topic}"


def file_message(path: str) -> dict:
    """The message of one file (local, or gs:// / s3:// through Beam's file systems): where it is, what it
    holds, and its checksum (read once, whole)."""
    from apache_beam.io.filesystems import FileSystems  # Beam: not for `import` of the options

    from ngramflow.transforms.lines import CORRUPT_ERRORS, LineReader

    uri = path if "://" in path else os.path.abspath(path)
    digest, size = hashlib.sha256(), 0
    try:
        with FileSystems.open(uri, compression_type="uncompressed") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
                size += len(block)
        reader = LineReader(uri, None)
    except CORRUPT_ERRORS as err:
        raise UserError(f"cannot publish {path}: {err}") from None
    try:
        first = reader.unread().split(b"\n", 1)[0].split(b"\t", 1)[0].decode("utf-8", "replace")
    finally:
        reader.close()
    return {"type": FILE, "name": uri.rstrip("/").rsplit("/", 1)[-1], "uri": uri, "size": size,
            "sha256": digest.hexdigest(), "format": reader.format, "order": first.count(" ") + 1 if first else None}


def end_message(files: int) -> dict:
    return {"type": END, "files": files}


def encode(message: dict) -> tuple[bytes, bytes]:
    """(key, value) of a message on the topic: a file's by its name (a run event's by its path)."""
    key = message.get("name") or message.get("path") or END_KEY
    return key.encode(), json.dumps(message, sort_keys=True).encode()


def decode(value: bytes) -> dict:
    return json.loads(value)


def _kafka_error(address: QueueAddress, err) -> RunFailed:
    return RunFailed(f"Kafka at {address.bootstrap}: {err}")


def ensure_topic(address: QueueAddress, timeout: float = 30) -> None:
    """Create the topic with one partition unless it exists (an import reads the partitions present when it
    starts, and one partition keeps the end marker behind every file)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": address.bootstrap})
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as err:
        raise _kafka_error(address, err.args[0].str()) from None
    topic = metadata.topics.get(address.topic)
    if topic is not None and topic.error is None:
        if len(topic.partitions) != 1:
            raise UserError(f"{address} has {len(topic.partitions)} partitions; the corpus queue needs a topic "
                            "of one partition (the end marker must come after every file)")
        return
    future = admin.create_topics([NewTopic(address.topic, num_partitions=1, replication_factor=-1)],
                                 operation_timeout=timeout)[address.topic]
    try:
        future.result(timeout)
    except KafkaException as err:
        if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise _kafka_error(address, err.args[0].str()) from None


def read_topic(address: QueueAddress, timeout: float = 30) -> list[dict]:
    """Every message on the topic now, in order (from the start up to its end offset when called)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": address.bootstrap, "group.id": "ngramflow-read-topic",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(address.topic, 0), timeout=timeout)
        consumer.assign([TopicPartition(address.topic, 0, low)])
        messages, offset = [], low
        while offset < high:
            record = consumer.poll(timeout)
            if record is None:
                raise RunFailed(f"Kafka at {address.bootstrap}: no message at offset {offset} of {address} "
                                f"within {timeout:.0f} s")
            if record.error():
                raise _kafka_error(address, record.error().str())
            messages.append(decode(record.value()))
            offset = record.offset() + 1
        return messages
    except KafkaException as err:
        raise _kafka_error(address, err.args[0].str()) from None
    finally:
        consumer.close()


def distinct_files(messages: list[dict]) -> dict[str, str]:
    """{name: checksum} of the files among ``messages``, each once; a name with two checksums is refused."""
    files = {}
    for message in messages:
        if message.get("type") != FILE:
            continue
        known = files.setdefault(message["name"], message["sha256"])
        if known != message["sha256"]:
            raise conflict(message["name"], known, message["sha256"])
    return files


def conflict(name: str, counted: str, other: str) -> RunFailed:
    return RunFailed(f"two different files named {name} were published to the queue (sha256 {counted[:12]}... "
                     f"counted, {other[:12]}... published again); a name stands for one file")


class Publisher:
    """An idempotent producer to one topic; ``close`` waits until every message is stored."""

    def __init__(self, address: QueueAddress):
        from confluent_kafka import Producer

        ensure_topic(address)
        self.address, self.errors = address, []
        self.producer = Producer({"bootstrap.servers": address.bootstrap, "enable.idempotence": True,
                                  "acks": "all", "delivery.timeout.ms": DELIVERY_TIMEOUT * 1000,
                                  "log_level": 3})  # errors only: retries are no news (close reports failures)

    def _delivered(self, err, _record) -> None:
        if err is not None:
            self.errors.append(err.str())

    def publish(self, message: dict) -> None:
        key, value = encode(message)
        self.producer.produce(self.address.topic, key=key, value=value, on_delivery=self._delivered)
        self.producer.poll(0)

    def close(self) -> None:
        left = self.producer.flush(DELIVERY_TIMEOUT + 10)
        if left or self.errors:
            raise _kafka_error(self.address, f"{left} message(s) not delivered; {'; '.join(self.errors[:3])}")


def publish_end(address: QueueAddress) -> int:
    """Publish the end marker, counting the distinct files published to the topic so far; that count."""
    files = len(distinct_files(read_topic(address)))
    publisher = Publisher(address)
    publisher.publish(end_message(files))
    publisher.close()
    return files
