"""The MKN stage inside a run: its settings, its part of the graph, its outputs and manifest section.

The stage runs after an import in the same job (``import --mkn-order N``) or
on an existing dataset (``ngramflow mkn``, see pipeline/mkn_run.py). Either
way the manifest records it under "mkn" only once everything, the ARPA file
included, has been written.
"""

import io
import os
import zlib
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from ngramflow import schemas
from ngramflow.errors import UserError
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout, order_of
from ngramflow.schemas.manifest import MknSection
from ngramflow.transforms.mkn import arpa
from ngramflow.transforms.mkn.discount import FALLBACK, KENLM_FALLBACK
from ngramflow.transforms.mkn.stage import EstimateMkn
from ngramflow.transforms.sinks import WriteRecords, WriteTables, write_then_rename
from ngramflow.transforms.sizing import ARPA_BATCH_ROWS


@dataclass(frozen=True)
class MknSettings:
    order: int
    fallback: tuple | None = KENLM_FALLBACK  # D1, D2, D3+ where estimation fails; None: fail instead
    arpa: str | None = None  # also write the model as an ARPA file here

    def validate(self, overwrite: bool = False) -> "MknSettings":
        if not 1 <= self.order <= schemas.MAX_ORDER:
            raise UserError(f"the MKN order must be within 1-{schemas.MAX_ORDER}, got {self.order}")
        if self.fallback is not None:
            for k, amount in enumerate(self.fallback, 1):
                if not 0 < amount <= k:
                    raise UserError(f"--discount-fallback D{k} must be within (0, {k}], got {amount:g}")
        if self.arpa:
            check_arpa_target(self.arpa, overwrite)
        return self


def parse_fallback(values: list[str]) -> tuple | None:
    """``--discount-fallback`` values: three numbers D1 D2 D3, or ``none``."""
    if [v.lower() for v in values] == ["none"]:
        return None
    try:
        if len(values) == 3:
            return tuple(float(v) for v in values)
    except ValueError:
        pass
    raise UserError(f"--discount-fallback takes three numbers D1 D2 D3 or 'none', got {' '.join(values)}")


def check_arpa_target(path: str, overwrite: bool) -> None:
    if "://" in path:
        return
    if os.path.isdir(path):
        raise UserError(f"ARPA file {path} is a directory")
    if os.path.exists(path) and not overwrite:
        raise UserError(f"ARPA file {path} already exists; pass --overwrite to replace it")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UserError(f"the folder of ARPA file {path} does not exist")


def read_ngram_parts(pipeline: beam.Pipeline, out: OutputDir, orders: list[int]):
    """The (ngram, match_count) tables of the part files of ORDERS in OUT, as the MKN stage's input."""
    return [
        pipeline
        | f"List order-{order} files" >> beam.Create(out.list_files(layout.ngrams_folder(order), ".parquet"))
        | f"Read order-{order} n-grams" >> beam.io.ReadAllFromParquetBatched(columns=["ngram", "match_count"])
        for order in orders
    ] | "All n-grams" >> beam.Flatten()


def ngram_counts(table: pa.Table, max_order: int):
    """(ngram, match count) pairs of an n-gram table's rows of orders 1..max_order."""
    table = table.filter(pc.less_equal(order_of(table["ngram"]), max_order))
    return zip(table.column("ngram").to_pylist(), table.column("match_count").to_pylist())


def part_of(key: str, parts: int) -> int:
    """A stable part number for a row, so a retried bundle rewrites the same file."""
    return zlib.crc32(key.encode("utf-8")) % parts


def rows_table(rows, schema: pa.Schema) -> pa.Table:
    """Tuples in the schema's column order -> a table."""
    columns = list(zip(*rows))
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


class WriteRowParts(beam.PTransform):
    """Row tuples -> ``root/FOLDER/part-NNNNN.parquet``, spread over ``parts`` files by their first column."""

    def __init__(self, root: str, folder: str, schema: pa.Schema, parts: int):
        super().__init__()
        self.root, self.folder, self.schema, self.parts = root, folder, schema, parts

    def expand(self, rows):
        folder, schema, parts = self.folder, self.schema, self.parts
        return (
            rows
            | "Key by part" >> beam.Map(lambda row: (part_of(row[0], parts), row))
            | "Gather parts" >> beam.GroupByKey()
            | "Part tables" >> beam.MapTuple(
                lambda part, part_rows: (layout.part(folder, part), rows_table(part_rows, schema)))
            | "Write parts" >> WriteTables(self.root, schema)
        )


def build_mkn(ngram_tables, out: OutputDir, settings: MknSettings, parts: int) -> None:
    """Add the stage, from n-gram tables (ngram and match_count columns) to its files, to the pipeline."""
    results = (
        ngram_tables
        | "N-gram counts" >> beam.FlatMap(ngram_counts, settings.order)
        | "Modified Kneser-Ney" >> EstimateMkn(settings.order, settings.fallback)
    )
    for table, folder, schema in (("ngrams", layout.MKN_NGRAMS, schemas.MKN_NGRAMS),
                                  ("contexts", layout.MKN_CONTEXTS, schemas.MKN_CONTEXTS)):
        for order, rows in enumerate(results[table], 1):
            rows | f"Write order-{order} MKN {table}" >> WriteRowParts(
                out.path, layout.by_order(folder, order), schema, parts)
    (results["discounts"]
     | "Name order statistics" >> beam.Map(lambda record: (f"order-{record['order']}", record))
     | "Write MKN order statistics" >> WriteRecords(out.join(layout.MKN_ORDER_STATS)))
    (results["orphans"]
     | "Orphan records" >> beam.MapTuple(lambda order, n: (f"order-{order}", {"order": order, "orphans": n}))
     | "Write MKN orphans" >> WriteRecords(out.join(layout.MKN_ORPHANS)))


def _discounts_table(records: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([
        {"order": r["order"], "ngrams": r["ngrams"],
         **{f"t{k}": t for k, t in enumerate(r["count_of_counts"], 1)},
         **dict(zip(("d1", "d2", "d3plus"), r["discounts"])),
         "source": r["discount_source"], "fallback_reason": r["fallback_reason"]}
        for r in records], schema=schemas.MKN_DISCOUNTS)


def finish_mkn(out: OutputDir, settings: MknSettings) -> MknSection:
    """After the pipeline: empty parts for empty orders, discounts.parquet, the ARPA file; the manifest section."""
    records = sorted(out.read_records(layout.MKN_ORDER_STATS), key=lambda r: r["order"])
    orphans = {r["order"]: r["orphans"] for r in out.read_records(layout.MKN_ORPHANS)}
    for order in range(1, settings.order + 1):
        out.ensure_parquet(layout.by_order(layout.MKN_NGRAMS, order), schemas.MKN_NGRAMS)
        out.ensure_parquet(layout.by_order(layout.MKN_CONTEXTS, order), schemas.MKN_CONTEXTS)
    out.write_parquet(layout.MKN_DISCOUNTS, _discounts_table(records))
    orders = {}
    for r in records:
        orders[str(r["order"])] = {
            "ngrams": out.parquet_rows(layout.by_order(layout.MKN_NGRAMS, r["order"])),
            **{k: v for k, v in r.items() if k not in ("order", "ngrams")},
            "orphans_dropped": orphans.get(r["order"], 0),
        }
    top = records[-1]
    section = MknSection(
        order=settings.order,
        discount_fallback=None if settings.fallback is None else list(settings.fallback),
        fallback_used=any(r["discount_source"] == FALLBACK for r in records),
        # Google's pruning shows as t1 = 0 at the highest order: no n-gram counted once.
        input_pruned=top["ngrams"] > 0 and top["count_of_counts"][0] == 0,
        vocabulary_size=records[0]["ngrams"] - 1,  # the unigrams but <s>, as KenLM's uniform 1/|V|
        orders=orders,
        arpa=settings.arpa,
    )
    if settings.arpa:
        write_arpa(out, section.to_json(), settings.arpa)
    return section


def _model_files(out: OutputDir, order: int) -> list[str]:
    return out.list_files(layout.by_order(layout.MKN_NGRAMS, order), ".parquet")


def _entries(paths: list[str]):
    """Batches of (ngram, log10 prob, log10 backoff); the backoff is null exactly at the highest order."""
    for path in paths:
        with FileSystems.open(path) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(
                    batch_size=ARPA_BATCH_ROWS, columns=["ngram", "log10_prob", "log10_backoff"]):
                yield list(zip(*(column.to_pylist() for column in batch.columns)))


def write_arpa(out: OutputDir, section: dict, path: str) -> None:
    """Stream the model's Parquet files into an ARPA file, written under a temporary name, then renamed."""
    if "://" not in path:
        path = os.path.abspath(path)  # Beam's local create needs a folder name
    model_order = section["order"]
    counts = [section["orders"][str(order)]["ngrams"] for order in range(1, model_order + 1)]

    def write(raw):
        fh = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        fh.write(arpa.header(counts))
        for order in range(1, model_order + 1):
            for chunk in arpa.section(order, _entries(_model_files(out, order))):
                fh.write(chunk)
        fh.write(arpa.FOOTER)
        fh.detach()

    write_then_rename(path, write)


def summary_lines(section: dict, row) -> None:
    """The MKN part of a run's summary table, through ``row(label, value)``."""
    row("MKN model order", str(section["order"]))
    row("  vocabulary |V|", f"{section['vocabulary_size']:,}")
    for order, stats in section["orders"].items():
        d1, d2, d3 = stats["discounts"]
        mark = "*" if stats["discount_source"] == FALLBACK else ""
        row(f"  {order}-gram D1 D2 D3+", f"{d1:.4g} {d2:.4g} {d3:.4g}{mark}")
    if section["input_pruned"]:
        row("  input looks pruned", "yes (t1 = 0)")
    if section["arpa"]:
        row("  ARPA file", os.path.basename(section["arpa"]))


def fallback_notes(section: dict) -> list[str]:
    return [f"  * {order}-grams: fallback discounts, because {stats['fallback_reason']}"
            for order, stats in section["orders"].items() if stats["discount_source"] == FALLBACK]
