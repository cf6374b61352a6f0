"""The options of an import, validated once, independent of the command line."""

import os
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from ngramflow.errors import UserError
from ngramflow.schemas import YEAR_MAX, YEAR_MIN
from ngramflow.transforms.policy import RowPolicy

if TYPE_CHECKING:  # both import Beam, which `ngramflow query` never needs: it starts faster without
    from ngramflow.pipeline.mkn import MknSettings
    from ngramflow.transforms.read import ReadSettings

POS_POLICIES = ("drop", "keep")
#: Where downloaded corpus files are kept between runs.
DEFAULT_CACHE = os.environ.get("NGRAMFLOW_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ngramflow"))
ON_CORRUPT = ("fail", "skip")
RUNNERS = ("direct", "flink")
DEFAULT_TASKMANAGER_MEMORY = "2g"
FLINK_MODES = ("batch", "checkpointed")
#: Where checkpointed Flink imports keep their checkpoints, one folder per run.
DEFAULT_CHECKPOINT_DIR = os.environ.get(
    "NGRAMFLOW_CHECKPOINT_DIR", os.path.join(os.path.expanduser("~"), ".cache", "ngramflow", "checkpoints"))
#: Checkpointed mode reads files in slices of this much decompressed text: a
#: checkpoint waits for the slices being read, never for a whole file.
DEFAULT_SLICE_SIZE = "64m"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, what: str) -> int:
    """'2g', '1536m', '64KiB' -> bytes."""
    found = _SIZE.match(str(text))
    if not found:
        raise UserError(f"{what} takes a size such as 2g or 64m, got {text!r}")
    return int(float(found.group(1)) * _UNITS[found.group(2).lower()])


@dataclass
class ImportOptions:
    inputs: list[str]
    output: str
    format: str | None = None
    year_min: int | None = None
    year_max: int | None = None
    min_count: int = 1
    pos: str = "drop"
    lowercase: bool = False
    keep_years: bool = False
    on_corrupt_file: str = "fail"
    max_reject_rate: float = 0.01
    overwrite: bool = False
    workers: int = 1
    cache: str = DEFAULT_CACHE
    runner: str = "direct"
    flink_master: str = "[local]"
    mode: str = "batch"
    checkpoint_interval: float = 10.0  # seconds
    checkpoint_dir: str = DEFAULT_CHECKPOINT_DIR
    resume_from: str | None = None
    slice_size: str | None = None  # checkpointed mode only; None: DEFAULT_SLICE_SIZE
    taskmanager_memory: str | None = None  # [local] only; None: DEFAULT_TASKMANAGER_MEMORY
    beam_args: list[str] = field(default_factory=list)
    mkn: "MknSettings | None" = None  # run the MKN stage after the import, in the same job

    def validate(self) -> "ImportOptions":
        for name in ("year_min", "year_max"):
            year = getattr(self, name)
            if year is not None and not YEAR_MIN <= year <= YEAR_MAX:
                raise UserError(f"--{name.replace('_', '-')} must be within {YEAR_MIN}-{YEAR_MAX}, got {year}")
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise UserError(f"--year-min {self.year_min} is after --year-max {self.year_max}")
        if self.min_count < 1:
            raise UserError(f"--min-count must be at least 1, got {self.min_count}")
        if not 0 <= self.max_reject_rate <= 1:
            raise UserError(f"--max-reject-rate is a fraction between 0 and 1, got {self.max_reject_rate}")
        if self.workers < 1:
            raise UserError(f"--workers must be at least 1, got {self.workers}")
        if self.mkn:
            self.mkn.validate(self.overwrite)
        self._validate_flink()
        return self

    def _validate_flink(self) -> None:
        if self.runner not in RUNNERS:
            raise UserError(f"--runner is one of {', '.join(RUNNERS)}, got {self.runner}")
        if self.mode not in FLINK_MODES:
            raise UserError(f"--mode is one of {', '.join(FLINK_MODES)}, got {self.mode}")
        if self.runner != "flink":
            changed = [flag for flag, value, default in (
                ("--flink-master", self.flink_master, "[local]"), ("--mode", self.mode, "batch"),
                ("--resume-from", self.resume_from, None), ("--slice-size", self.slice_size, None),
                ("--taskmanager-memory", self.taskmanager_memory, None))
                if value != default]
            if changed:
                raise UserError(f"{changed[0]} needs --runner flink")
            return
        from ngramflow.pipeline.flink.config import memory_bytes
        from ngramflow.pipeline.flink.session import LOCAL, check_master, resume_point

        check_master(self.flink_master)
        memory_bytes(self.taskmanager_memory or DEFAULT_TASKMANAGER_MEMORY)
        if self.checkpoint_interval <= 0:
            raise UserError(f"--checkpoint-interval must be positive, got {self.checkpoint_interval}")
        if self.resume_from:
            if self.mode != "checkpointed":
                raise UserError("--resume-from needs --mode checkpointed")
            resume_point(self.resume_from)
        if self.slice_size is not None:
            if self.mode != "checkpointed":
                raise UserError("--slice-size needs --mode checkpointed")
            if parse_size(self.slice_size, "--slice-size") < 1 << 10:
                raise UserError(f"--slice-size must be at least 1k, got {self.slice_size}")
        if self.flink_master != LOCAL and self.taskmanager_memory:
            raise UserError("--taskmanager-memory applies to --flink-master [local]; a cluster's TaskManagers "
                            "are sized when the cluster starts (ngramflow flink up --taskmanager-memory)")

    def read_settings(self, progress_dir: str | None = None) -> "ReadSettings":
        from ngramflow.transforms.read import ReadSettings

        return ReadSettings(
            policy=RowPolicy(pos=self.pos, lowercase=self.lowercase, year_min=self.year_min, year_max=self.year_max),
            keep_years=self.keep_years,
            format=self.format,
            on_corrupt=self.on_corrupt_file,
            progress_dir=progress_dir,
            slice_bytes=self._slice_bytes(),
        )

    def _slice_bytes(self) -> int | None:
        # --on-corrupt-file skip verifies a file whole before reading it: slices would each verify it again.
        if self.runner != "flink" or self.mode != "checkpointed" or self.on_corrupt_file == "skip":
            return None
        return parse_size(self.slice_size or DEFAULT_SLICE_SIZE, "--slice-size")

    def recorded(self) -> dict:
        """The options as the manifest records them."""
        skipped = ("inputs", "output", "cache")
        if self.runner != "flink":
            skipped += ("flink_master", "mode", "checkpoint_interval", "checkpoint_dir", "resume_from",
                        "slice_size", "taskmanager_memory")
        return {k: v for k, v in asdict(self).items() if k not in skipped}
