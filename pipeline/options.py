"""The options of an import, validated once, independent of the command line."""

import os
from dataclasses import asdict, dataclass, field

from pipeline.errors import UserError
from pipeline.mkn import MknSettings
from schemas import YEAR_MAX, YEAR_MIN
from transforms.filters import RowPolicy
from transforms.read import ReadSettings

POS_POLICIES = ("drop", "keep")
#: Where downloaded corpus files are kept between runs.
DEFAULT_CACHE = os.environ.get("NGRAMFLOW_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ngramflow"))
ON_CORRUPT = ("fail", "skip")


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
    beam_args: list[str] = field(default_factory=list)
    mkn: MknSettings | None = None  # run the MKN stage after the import, in the same job

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
        return self

    def read_settings(self, progress_dir: str | None = None) -> ReadSettings:
        return ReadSettings(
            policy=RowPolicy(pos=self.pos, lowercase=self.lowercase, year_min=self.year_min, year_max=self.year_max),
            keep_years=self.keep_years,
            format=self.format,
            on_corrupt=self.on_corrupt_file,
            progress_dir=progress_dir,
        )

    def recorded(self) -> dict:
        """The options as the manifest records them."""
        return {k: v for k, v in asdict(self).items() if k not in ("inputs", "output", "cache")}
