"""The manifest, ``_manifest.json``: what a complete dataset holds and how it was made.

One writer: Manifest (and MknSection, the MKN stage's part of it) turns typed
values into the JSON object, and with_mkn replaces the MKN section of a
manifest read back. One reader: parse_manifest checks the fields readers rely
on and refuses a dataset written by a newer ngramflow. Publishing
(pipeline/output.py) adds ``files`` (every file of the dataset and its size)
and ``output_bytes`` as it writes the manifest, last.
"""

import json
import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field, replace

from ngramflow.errors import UserError
from ngramflow.schemas import MAX_ORDER
from ngramflow.schemas.layout import MANIFEST

#: The version of the dataset's format: bumped whenever a column, a path of the layout or a
#: manifest field is added, removed or changes meaning. Readers refuse a newer version.
SCHEMA_VERSION = 2  # 2: "ranges", the n-gram range of each part file


def command_line() -> str:
    """The running command as a manifest records it, quoted for a shell."""
    return " ".join(shlex.quote(a) for a in sys.argv)


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class OrderTotals:
    """One order's n-grams and their match and volume totals."""

    ngrams: int
    match_count: int
    volume_count: int


@dataclass(frozen=True)
class ImportRecord:
    """What an import read: absent from a dataset written otherwise (benchmarks/lookup_dataset.py)."""

    inputs: list[dict]  # one record per n-gram file (transforms/read.py: size, format, rows, status, reason)
    totalcounts_inputs: list[str]
    duplicate_inputs: list[dict]  # {"path", "same_as"}: files found twice among the inputs, read once
    versions: dict[str, str]  # of ngramflow and the libraries that shape its output

    @property
    def rows_read(self) -> int:
        return sum(s["rows_read"] for s in self.inputs)

    @property
    def rows_rejected(self) -> int:
        return sum(s["rows_rejected"] for s in self.inputs)

    def to_json(self) -> dict:
        return {**asdict(self), "rows_read": self.rows_read, "rows_rejected": self.rows_rejected,
                "files_skipped": sum(s["status"] == "skipped" for s in self.inputs)}


@dataclass(frozen=True)
class MknSection:
    """The manifest's "mkn" section: the model's order, its statistics per order, where it went."""

    order: int
    discount_fallback: list[float] | None  # D1, D2, D3+ where estimation fails; None: fail instead
    fallback_used: bool
    input_pruned: bool
    vocabulary_size: int
    orders: dict[str, dict]  # per order: the model's n-grams and the stage's record (transforms/mkn/discount.py)
    arpa: str | None
    # Recorded by ``ngramflow mkn``; a model built by the import shares the import's.
    wall_seconds: float | None = None
    command: str | None = None

    def to_json(self) -> dict:
        section = {"status": "complete", **asdict(self)}
        for own in ("wall_seconds", "command"):
            if section[own] is None:
                del section[own]
        return section

    def with_run(self, wall_seconds: float) -> "MknSection":
        """This section with the wall time and the command of the ``ngramflow mkn`` that built it."""
        return replace(self, wall_seconds=wall_seconds, command=command_line())


@dataclass(frozen=True)
class Manifest:
    """A complete dataset's manifest; to_json gives what is written (pipeline/output.py publishes it)."""

    command: str
    options: dict  # the import's options as ImportOptions.recorded() gives them
    orders: dict[int, OrderTotals]
    totalcounts_years: int
    vocabulary_tokens: int
    run: ImportRecord | None = None
    wall_seconds: float | None = None
    mkn: MknSection | None = None
    flink: dict | None = None  # the Flink run, as FlinkRunInfo.recorded() gives it
    aggregation: dict | None = None  # how the n-grams were totalled (pipeline/graph.py aggregation())
    # Per order, [file, first n-gram, last n-gram] of each part file in n-gram order, when each part file
    # is one contiguous range (transforms/spill.py range_index); None when part files are hash shards.
    ranges: dict[str, list] | None = None
    created: str = field(default_factory=_utc_now)

    def to_json(self) -> dict:
        manifest = {
            "status": "complete",
            "schema_version": SCHEMA_VERSION,
            "created": self.created,
            "command": self.command,
            "options": self.options,
            "orders": {str(order): asdict(totals) for order, totals in sorted(self.orders.items())},
            "totalcounts_years": self.totalcounts_years,
            "vocabulary_tokens": self.vocabulary_tokens,
        }
        if self.run is not None:
            manifest |= self.run.to_json()
        if self.wall_seconds is not None:
            manifest["wall_seconds"] = self.wall_seconds
        if self.flink is not None:
            manifest["flink"] = self.flink
        if self.aggregation is not None:
            manifest["aggregation"] = self.aggregation
        if self.ranges is not None:
            manifest["ranges"] = self.ranges
        return with_mkn(manifest, self.mkn)


def with_mkn(manifest: dict, section: MknSection | None) -> dict:
    """MANIFEST with its "mkn" section replaced by SECTION (removed if None)."""
    manifest = {k: v for k, v in manifest.items() if k != "mkn"}
    if section is not None:
        manifest["mkn"] = section.to_json()
    return manifest


#: JSON's names for the Python types json.load returns.
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number",
               bool: "true or false", type(None): "null"}


def _typed(value, kind: type, name: str):
    """``value`` if it is a JSON value of ``kind``; ValueError naming the field otherwise."""
    if type(value) is not kind:  # exactly: JSON's true is not an integer, though Python's bool is an int
        raise ValueError(f'"{name}" should be {_JSON_TYPES[kind]}, not {_JSON_TYPES[type(value)]}')
    return value


def _field(section: dict, key: str, kind: type, where: str = ""):
    """``section[key]`` if it is a JSON value of ``kind``; ValueError naming the field otherwise."""
    if key not in section:
        raise ValueError(f'"{where}{key}" is missing')
    return _typed(section[key], kind, where + key)


def check_manifest(manifest) -> None:
    """Raise ValueError unless the fields readers rely on have the types the writer gives them."""
    if type(manifest) is not dict:
        raise ValueError(f"it should be a JSON object, not {_JSON_TYPES[type(manifest)]}")
    _field(manifest, "schema_version", int)
    orders = _field(manifest, "orders", dict)
    for order in orders:
        if order not in {str(n) for n in range(1, MAX_ORDER + 1)}:
            raise ValueError(f'"orders" has an entry "{order}", which is not an n-gram order')
        _field(_field(orders, order, dict, "orders."), "ngrams", int, f"orders.{order}.")
    options = _field(manifest, "options", dict)
    for flag in ("keep_years", "lowercase"):
        if flag in options:
            _field(options, flag, bool, "options.")
    if manifest.get("mkn") is not None:
        _field(_field(manifest, "mkn", dict), "order", int, "mkn.")
    if "inputs" in manifest:
        for k, record in enumerate(_field(manifest, "inputs", list)):
            _field(_typed(record, dict, f"inputs.{k}"), "size", int, f"inputs.{k}.")


def parse_manifest(data: bytes, dataset: str) -> dict:
    """The manifest of DATASET from its bytes, checked; a UserError says what is wrong with it."""
    try:
        manifest = json.loads(data.decode("utf-8"))
        check_manifest(manifest)
    except ValueError as err:  # also what a file that is not JSON or not UTF-8 raises
        raise UserError(f"{os.path.join(dataset, MANIFEST)} is not a valid ngramflow manifest: {err}") from None
    if manifest["schema_version"] > SCHEMA_VERSION:
        raise UserError(f"{dataset} was written by a newer ngramflow (schema version "
                        f"{manifest['schema_version']}); upgrade ngramflow to read it")
    return manifest
