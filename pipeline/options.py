"""The options of an import, each declared once (flag, type, default, help, allowed values), independent of
the command line, which is built from them (ngramflow.option_fields)."""

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ngramflow.pipeline import option_fields
from ngramflow.corpus.queue import QueueAddress
from ngramflow.errors import UserError
from ngramflow.pipeline.option_fields import OneOf, Size, Within, option
from ngramflow.pipeline.flink.options import FlinkOptions
from ngramflow.schemas import YEAR_MAX, YEAR_MIN
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.sizing import PARALLEL_INPUT_BYTES, SORTED_INPUT_FILE_BYTES, default_workers
from ngramflow.transforms.formats import INPUT_FORMATS

if TYPE_CHECKING:  # both import Beam, which `ngramflow query` never needs: it starts faster without
    from ngramflow.pipeline.mkn import MknSettings
    from ngramflow.transforms.lines import ReadSettings

#: Where downloaded corpus files are kept between runs.
DEFAULT_CACHE = os.environ.get("NGRAMFLOW_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "ngramflow"))
YEARS = Within(YEAR_MIN, YEAR_MAX)
#: What an import from a queue expects to read unless told (--queue-input-size): it sizes the keyed merge
#: before any file is known; a corpus much larger than this makes each key's group larger, not wrong.
DEFAULT_QUEUE_INPUT_SIZE, QUEUE_INPUT_SIZE = "1g", Size("1k")


@dataclass
class ImportOptions:
    inputs: list[str] = option(
        help="n-gram files, directories (searched for *.gz) or glob patterns; gs:// and s3:// paths when Beam's "
             "extra for them is installed; http(s) URLs and corpus: specs (see 'ngramflow corpus --help') are "
             "downloaded into --cache first",
        flags=(), metavar="INPUT", recorded=False)
    output: str = option(help="dataset directory to create", flags=("-o", "--output"), recorded=False)
    cache: str = option(
        DEFAULT_CACHE, "where downloaded files are kept; verified files are not fetched again "
                       "(environment: NGRAMFLOW_CACHE)", metavar="DIR", recorded=False)
    format: str | None = option(
        None, "force one input format instead of detecting it per file (default: detect)", allowed=OneOf(INPUT_FORMATS))
    year_min: int | None = option(None, "drop year rows before this year (inclusive bound)", allowed=YEARS)
    year_max: int | None = option(None, "drop year rows after this year (inclusive bound)", allowed=YEARS)
    min_count: int = option(
        1, "keep n-grams whose total match count over the kept years is at least this (Google published only "
           "n-grams with a corpus total >= 40)", allowed=Within(1))
    pos: str = option(
        "drop", "POS-tagged n-grams (word_NOUN, _NOUN_): drop them (untagged rows already include their "
                "occurrences) or keep them as n-grams of their own", allowed=OneOf(("drop", "keep")))
    lowercase: bool = option(False, "fold case: sum case variants into one n-gram")
    keep_years: bool = option(False, "also keep each n-gram's per-year (year, match, volume) series")
    on_corrupt_file: str = option(
        "fail", "a truncated or corrupt gzip fails the run, or is skipped whole and recorded in the manifest "
                "(skip verifies each file before reading it)", allowed=OneOf(("fail", "skip")))
    max_reject_rate: float = option(
        0.01, "fail the run when more than this fraction of rows is malformed", allowed=Within(0, 1))
    overwrite: bool = option(False, "replace an existing complete dataset in --output", resumable=True)
    merge: str = option(
        "auto", "how the embedded runner totals n-grams: input-order writes each file's n-grams as it reads them, "
                "for files each sorted by n-gram and sharing none (Google's layout), and totals through sorted run "
                "files instead when a few files' first lines are out of order (imports again through them when "
                "a file is out of order further on); runs always totals through sorted run files on disk; auto "
                "(default) is input-order for files named as Google's exports name them, of "
                f"{SORTED_INPUT_FILE_BYTES >> 20} MiB and more on average, unless --lowercase (case variants lie "
                "apart in a sorted file)",
        allowed=OneOf(("auto", "input-order", "runs")))
    workers: int | None = option(
        None, f"parallel worker threads of the embedded runner (default: one per core for "
              f"{PARALLEL_INPUT_BYTES >> 20} MiB of input or more, else 1); on Flink, the job's parallelism "
              "(default 1)", allowed=Within(1), resumable=True)
    from_kafka: str | None = option(
        None, "read the files to import from this Kafka topic instead of INPUT: one message per file, as "
              "'ngramflow corpus publish' or 'corpus download --publish' write them; the import ends once it has "
              "read as many distinct files as the topic's end-of-corpus marker counts (README, 'Importing from a "
              "Kafka queue')",
        metavar="kafka://HOST:PORT/TOPIC", recorded=False,
        needs=(("runner", "flink", "the embedded runner cannot follow a queue: use --runner flink --mode "
                                   "checkpointed"),
               ("mode", "checkpointed", "a queue is read as a stream, whose offsets Flink's checkpoints hold")))
    queue_input_size: str | None = option(
        None, "with --from-kafka: the total size of the files the queue will carry, about; sizes the keyed merge "
              f"(default {DEFAULT_QUEUE_INPUT_SIZE})%(default).0s", metavar="SIZE", allowed=QUEUE_INPUT_SIZE)
    events: str | None = option(
        None, "with --from-kafka: publish the run's events (each file completed with its rows read and rejected, "
              "the end of the input, the final summary) as JSON messages to this Kafka topic",
        metavar="kafka://HOST:PORT/TOPIC", recorded=False)
    runner: str = option(
        "direct", "direct: Beam's embedded runner; flink: Apache Flink", allowed=OneOf(("direct", "flink")),
        shown_with=FlinkOptions)
    flink: FlinkOptions = field(default_factory=FlinkOptions)  # used with --runner flink only
    beam_args: list[str] = option(default_factory=list, help="options for Beam itself (after a lone '--')",
                                  cli=False, resumable=True)
    mkn: "MknSettings | None" = None  # run the MKN stage after the import, in the same job

    def validate(self) -> "ImportOptions":
        scope = {**vars(self), **vars(self.flink)}
        option_fields.check(self, scope)
        option_fields.check(self.flink, scope)
        for flag, value in (("--events", self.events), ("--queue-input-size", self.queue_input_size)):
            if value and not self.from_kafka:
                raise UserError(f"{flag} needs --from-kafka")
        for flag, value in (("--from-kafka", self.from_kafka), ("--events", self.events)):
            if value:
                QueueAddress.parse(value, flag)
        if self.merge == "input-order" and (self.runner != "direct" or self.lowercase):
            raise UserError("--merge input-order needs the embedded runner (--runner direct) and no --lowercase: "
                            "case variants of an n-gram lie apart in a sorted file")
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise UserError(f"--year-min {self.year_min} is after --year-max {self.year_max}")
        if self.mkn:
            self.mkn.validate(self.overwrite)
        return self

    def validate_sources(self) -> "ImportOptions":
        """What an import reads: INPUT files or a queue (--from-kafka), exactly one of them."""
        if bool(self.inputs) == bool(self.from_kafka):
            raise UserError("give either INPUT files or --from-kafka" if self.inputs else
                            "no INPUT given (files, folders, patterns), and no --from-kafka")
        return self

    def queue_bytes(self) -> int:
        """The expected input of --from-kafka, in bytes (--queue-input-size)."""
        return QUEUE_INPUT_SIZE.bytes("--queue-input-size", self.queue_input_size or DEFAULT_QUEUE_INPUT_SIZE)

    def workers_for(self, input_bytes: int) -> int:
        """--workers, or its default for INPUT_BYTES of input files."""
        if self.workers is not None:
            return self.workers
        return default_workers(input_bytes) if self.runner == "direct" else 1

    def read_settings(self, progress_dir: str | None = None) -> "ReadSettings":
        from ngramflow.transforms.lines import ReadSettings

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
        if self.runner != "flink" or not self.flink.checkpointed or self.on_corrupt_file == "skip":
            return None
        return self.flink.slice_bytes()

    def recorded(self) -> dict:
        """The options as the manifest records them: the Flink ones only for a run on Flink."""
        options = option_fields.recorded(self)
        if self.runner != "flink":
            for name in option_fields.recorded(self.flink):
                del options[name]
        return options

    def resume_identity(self) -> dict:
        """The recorded options a checkpointed run must be resumed with unchanged (they shape its counts)."""
        resumable = option_fields.resumable(ImportOptions)
        return {name: value for name, value in self.recorded().items() if name not in resumable}
