"""Read a corpus queue (corpus/queue.py) with Beam's KafkaIO: each distinct file once, as work units.

KafkaIO is Java, expanded by an expansion service (pipeline/kafka/expansion.py) into a Read of an
unbounded source that Flink runs itself: the topic's offsets are part of every Flink checkpoint. A file's
name and checksum are kept in keyed state, so a file published twice, or read again after a restore, is
imported once, and a name published with another checksum fails the run. The end marker and such a conflict
are recorded in the build folder (layout.QUEUE_END, QUEUE_CONFLICT); the run ends the job from there
(pipeline/kafka/end.py).
"""

import time

import apache_beam as beam
from apache_beam.coders import StrUtf8Coder
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec

from ngramflow.corpus import queue
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout
from ngramflow.transforms.units import pack_files


#: Per file name, the checksum of the file counted under it (per the marker's key, its count).
COUNTED = ReadModifyWriteStateSpec("sha256", StrUtf8Coder())
_COUNTED_STATE = beam.DoFn.StateParam(COUNTED)


class CountEachFileOnce(beam.DoFn):
    """(name, message) -> the file messages of names not seen before; the end marker is recorded."""

    def __init__(self, out_path: str):
        self.out_path = out_path

    def process(self, keyed, counted=_COUNTED_STATE):
        name, message = keyed
        before = counted.read()
        if message["type"] == queue.END:
            if before is None:  # a second marker changes nothing
                counted.write(str(message["files"]))
                # When: a record from before a restore to a checkpoint without the marker is stale (end.py).
                OutputDir(self.out_path).write_json(layout.QUEUE_END, {"files": message["files"],
                                                                       "written_ms": int(time.time() * 1000)})
            return
        if before is None:
            counted.write(message["sha256"])
            yield message
        elif before != message["sha256"]:
            # Recorded for the run to fail at once (pipeline/kafka/end.py), rather than raised here: Flink would
            # restart the job from its last checkpoint, meet the message again, and fail only after every restart.
            OutputDir(self.out_path).write_json(layout.QUEUE_CONFLICT, {
                "name": name, "counted": before, "other": message["sha256"], "uri": message["uri"]})


class ReadQueue(beam.PTransform):
    """A corpus queue -> work units (transforms/units.py, pack_files) of each distinct file, in slices."""

    def __init__(self, address: queue.QueueAddress, expansion_service: str, slice_bytes: int | None,
                 out_path: str):
        super().__init__()
        self.address, self.expansion_service = address, expansion_service
        self.slice_bytes, self.out_path = slice_bytes, out_path

    def expand(self, pbegin):
        from apache_beam.io.kafka import ReadFromKafka

        slice_bytes = self.slice_bytes
        return (
            pbegin
            # No consumer group: the offsets read are in Flink's checkpoints, not committed to Kafka.
            | "Read the queue" >> ReadFromKafka(
                consumer_config={"bootstrap.servers": self.address.bootstrap, "auto.offset.reset": "earliest"},
                topics=[self.address.topic], expansion_service=self.expansion_service)
            | "Decode messages" >> beam.MapTuple(lambda key, value: (key.decode(), queue.decode(value)))
            | "Count each file once" >> beam.ParDo(CountEachFileOnce(self.out_path))
            | "Cut each file into work units" >> beam.FlatMap(
                lambda message: pack_files([(message["uri"], message["size"])], 1, slice_bytes))
        )
