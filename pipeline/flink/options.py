"""The options of a run on Flink, one typed group: what the runner needs, nothing of the import's own options."""

import os
from dataclasses import dataclass
from typing import ClassVar

from ngramflow.pipeline.option_fields import Matches, OneOf, Size, Within, option
from ngramflow.transforms.sizing import DEFAULT_SLICE_SIZE

LOCAL = "[local]"
MODES = OneOf(("batch", "checkpointed"))
DEFAULT_TASKMANAGER_MEMORY = "2g"
#: A TaskManager below 1g cannot hold Flink's fixed overheads plus RocksDB.
TASKMANAGER_MEMORY = Size("1g")
SLICE_SIZE = Size("1k")
#: Where checkpointed Flink imports keep their checkpoints, one folder per run.
DEFAULT_CHECKPOINT_DIR = os.environ.get(
    "NGRAMFLOW_CHECKPOINT_DIR", os.path.join(os.path.expanduser("~"), ".cache", "ngramflow", "checkpoints"))

_FLINK = ("runner", "flink")
_CHECKPOINTED = ("mode", "checkpointed")


@dataclass
class FlinkOptions:
    HELP: ClassVar = ("Flink", "Run on Apache Flink (see 'Running on Flink' in the README). "
                               "The job server is started and stopped for the run.")

    flink_master: str = option(
        LOCAL, "[local]: a Flink cluster inside the job server; HOST:PORT: the REST endpoint of a running "
               "cluster (e.g. from 'ngramflow flink up')",
        metavar="[local]|HOST:PORT", allowed=Matches(r"\[local\]|[\w.-]+:\d{1,5}",
                                                     "[local] or HOST:PORT of a JobManager's REST endpoint"),
        needs=(_FLINK,), resumable=True)
    mode: str = option(
        "batch", "batch: Flink's batch execution, shuffles spill through managed memory; checkpointed: streaming "
                 "execution, counts in RocksDB state, periodic checkpoints",
        allowed=MODES, needs=(_FLINK,))
    checkpoint_interval: float = option(
        10.0, "checkpointed mode: time between checkpoints", metavar="SECONDS", allowed=Within(0, above=True),
        resumable=True)
    checkpoint_dir: str = option(
        DEFAULT_CHECKPOINT_DIR, "checkpointed mode: where checkpoints are kept (one folder per run; must be shared "
                                "storage for a remote cluster); environment: NGRAMFLOW_CHECKPOINT_DIR",
        metavar="DIR", resumable=True)
    resume_from: str | None = option(
        None, "checkpointed mode: continue an interrupted import (same inputs, options and --output) from a "
              "retained checkpoint: a chk-N folder or a run's checkpoint folder",
        metavar="CHECKPOINT", needs=(_FLINK, _CHECKPOINTED), resumable=True)
    slice_size: str | None = option(
        None, f"checkpointed mode: files are read in slices of about this much decompressed text (default "
              f"{DEFAULT_SLICE_SIZE}), so a checkpoint waits for the slices being read, never for whole files; "
              f"not with --on-corrupt-file skip, which reads files whole%(default).0s",
        metavar="SIZE", allowed=SLICE_SIZE, needs=(_FLINK, _CHECKPOINTED))
    taskmanager_memory: str | None = option(
        None, f"[local]: the bound of the embedded cluster's memory (default {DEFAULT_TASKMANAGER_MEMORY}); a "
              f"cluster's TaskManagers are sized by 'flink up'",
        metavar="SIZE", allowed=TASKMANAGER_MEMORY, resumable=True,
        needs=(_FLINK, ("flink_master", LOCAL, "a cluster's TaskManagers are sized when the cluster starts "
                                               "(ngramflow flink up --taskmanager-memory)")))

    @property
    def checkpointed(self) -> bool:
        return self.mode == "checkpointed"

    def memory_bound(self) -> int:
        """Bytes of the embedded cluster's memory ([local] only)."""
        return TASKMANAGER_MEMORY.bytes("--taskmanager-memory", self.taskmanager_memory or DEFAULT_TASKMANAGER_MEMORY)

    def slice_bytes(self) -> int:
        return SLICE_SIZE.bytes("--slice-size", self.slice_size or DEFAULT_SLICE_SIZE)
