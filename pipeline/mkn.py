"""The MKN stage inside a run: its settings, its part of the graph, its outputs and manifest section.

The stage runs after an import in the same job (``import --mkn-order N``) or
on an existing dataset (``ngramflow mkn``, see pipeline/mkn_run.py). Either
way the manifest records it under "mkn" only once everything, the ARPA file
included, has been written.
"""

import os
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa

from ngramflow import schemas
from ngramflow.errors import UserError
from ngramflow.pipeline.output import OutputDir
from ngramflow.schemas import layout
from ngramflow.schemas.manifest import MknSection
from ngramflow.transforms.mkn import arpa
from ngramflow.transforms.mkn.discount import FALLBACK, KENLM_FALLBACK
from ngramflow.transforms.mkn.stage import EstimateMkn
from ngramflow.transforms.mkn.tables import Work
from ngramflow.transforms.sinks import WriteRecords, write_then_rename
from ngramflow.transforms.sizing import mkn_buckets, mkn_memory


#: The least budget the stage runs in: a worker's own share plus a small task.
MIN_MEMORY = 512 << 20


@dataclass(frozen=True)
class MknSettings:
    order: int
    fallback: tuple | None = KENLM_FALLBACK  # D1, D2, D3+ where estimation fails; None: fail instead
    arpa: str | None = None  # also write the model as an ARPA file here
    memory: int = 0  # bytes the stage may use, all its workers together; 0: sizing.mkn_memory()

    def validate(self, overwrite: bool = False) -> "MknSettings":
        if not 1 <= self.order <= schemas.MAX_ORDER:
            raise UserError(f"the MKN order must be within 1-{schemas.MAX_ORDER}, got {self.order}")
        if self.fallback is not None:
            for k, amount in enumerate(self.fallback, 1):
                if not 0 < amount <= k:
                    raise UserError(f"--discount-fallback D{k} must be within (0, {k}], got {amount:g}")
        if self.arpa:
            check_arpa_target(self.arpa, overwrite)
        if self.memory and self.memory < MIN_MEMORY:
            raise UserError(f"--mkn-memory must be at least {MIN_MEMORY >> 20} MiB, got {self.memory >> 20} MiB")
        return self

    @property
    def budget(self) -> int:
        return self.memory or mkn_memory()


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


def build_mkn(pipeline: beam.Pipeline, source: OutputDir, out: OutputDir, settings: MknSettings,
              order_rows: dict[int, int], workers: int) -> None:
    """Add the stage to PIPELINE: from the n-gram part files in SOURCE of the orders in ORDER_ROWS
    ({order: n-grams}) to the model's files in OUT, with WORKERS processes sharing the memory budget."""
    orders = [order for order in sorted(order_rows) if order <= settings.order]
    work = Work(folder=out.join(layout.SPILL, layout.MKN),
                buckets=mkn_buckets(max(order_rows.values()), workers, settings.budget))
    parts = [(order, path) for order in orders for path in source.list_files(layout.ngrams_folder(order), ".parquet")]
    results = (
        pipeline
        | "N-gram part files" >> beam.Create(parts)
        | "Modified Kneser-Ney" >> EstimateMkn(work, settings.order, settings.fallback, out.path)
    )
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


def write_arpa(out: OutputDir, section: dict, path: str) -> None:
    """Write the model's Parquet files as an ARPA file, under a temporary name, then renamed."""
    if "://" not in path:
        path = os.path.abspath(path)  # Beam's local create needs a folder name
    model_order = section["order"]
    counts = [section["orders"][str(order)]["ngrams"] for order in range(1, model_order + 1)]

    def write(fh):
        import duckdb  # here: an import that writes no ARPA file does not load it (0.06-0.12 s of its start)

        con = duckdb.connect()
        fh.write(arpa.header(counts).encode())
        for order in range(1, model_order + 1):
            arpa.write_section(con, order, out.list_files(layout.by_order(layout.MKN_NGRAMS, order), ".parquet"), fh)
        fh.write(arpa.FOOTER.encode())
        con.close()

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
