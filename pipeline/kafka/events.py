"""Run events of an import from a queue (--events kafka://HOST:PORT/TOPIC), as JSON messages, so that a
dashboard can follow the run:

    {"type": "file_done", "path": ..., "rows_read": ..., "rows_rejected": ..., "rows_filtered": ..., "status": ...}
    {"type": "progress", "files_done": N, "rows_read": ..., "rows_rejected": ...}
    {"type": "summary", ...}   the run's summary, once the dataset is published (pipeline/run.py)

Events come from the job's workers as each file's last slice is read. They are at least once: after a
restore from a checkpoint, the files read since are read again and reported again (the counts in the
dataset are exact; a dashboard keeps the last event per path).
"""

import apache_beam as beam
from apache_beam.coders import PickleCoder
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec

from ngramflow.corpus import queue
from ngramflow.transforms.units import slice_count

_ROWS = ("rows_read", "rows_rejected", "rows_filtered")
FILE_READ = ReadModifyWriteStateSpec("file", PickleCoder())
_FILE_READ_STATE = beam.DoFn.StateParam(FILE_READ)
TOTALS = ReadModifyWriteStateSpec("totals", PickleCoder())
_TOTALS_STATE = beam.DoFn.StateParam(TOTALS)


class _Publishing(beam.DoFn):
    """A DoFn with an idempotent producer to the events topic, flushed at the end of each bundle."""

    def __init__(self, address: str):
        self.address, self.publisher = address, None

    def setup(self):
        self.publisher = queue.Publisher(queue.QueueAddress.parse(self.address, "--events"))

    def finish_bundle(self):
        self.publisher.close()


class FileEvents(_Publishing):
    """(path, slice stats) -> one "file_done" event per file once all its slices are read; (None, file stats)."""

    def __init__(self, address: str, slice_bytes: int | None):
        super().__init__(address)
        self.slice_bytes = slice_bytes

    def process(self, keyed, read=_FILE_READ_STATE):
        path, stats = keyed
        file = read.read() or {"slices": set(), **{key: 0 for key in _ROWS}, "status": "ok"}
        if stats["slice"] in file["slices"]:
            return  # a slice read again after a restore
        file["slices"].add(stats["slice"])
        for key in _ROWS:
            file[key] += stats[key]
        if stats["status"] != "ok":
            file["status"] = stats["status"]
        read.write(file)
        if len(file["slices"]) == slice_count(stats["size"], self.slice_bytes):
            event = {"type": "file_done", "path": path, **{key: file[key] for key in (*_ROWS, "status")}}
            self.publisher.publish(event)
            yield None, event


class ProgressEvents(_Publishing):
    """(None, file event) -> a "progress" event with the run's totals so far."""

    def process(self, keyed, totals=_TOTALS_STATE):
        _, event = keyed
        done = totals.read() or {"files_done": 0, **{key: 0 for key in _ROWS}}
        done["files_done"] += 1
        for key in _ROWS:
            done[key] += event[key]
        totals.write(done)
        self.publisher.publish({"type": "progress", **done})


class PublishRunEvents(beam.PTransform):
    """The import's file statistics (ReadNgramFile.FILE_STATS: one list per work unit) -> events."""

    def __init__(self, address: str, slice_bytes: int | None):
        super().__init__()
        self.address, self.slice_bytes = address, slice_bytes

    def expand(self, file_stats):
        return (
            file_stats
            | "Each slice's statistics" >> beam.FlatMap(lambda named: [(s["path"], s) for s in named[1]])
            | "File events" >> beam.ParDo(FileEvents(self.address, self.slice_bytes))
            | "Progress events" >> beam.ParDo(ProgressEvents(self.address))
        )


def publish_summary(address: str, summary: dict) -> None:
    publisher = queue.Publisher(queue.QueueAddress.parse(address, "--events"))
    publisher.publish({"type": "summary", **summary})
    publisher.close()
