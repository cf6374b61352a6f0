"""The coder of a PCollection typed as tables (pa.Table), registered with Beam on import.

Its bytes are a pickled table's (wire.py); what it adds is a size estimate that
encodes nothing. Beam samples the byte size of a PCollection's elements, even
within a fused stage, by encoding them: pickled, every sampled run table was
compressed for nothing (0.8 s of CPU on 10M rows, cProfile of a 1-worker import).
Kept apart from wire.py, which every command imports: this one needs Beam.
"""

import apache_beam as beam
import pyarrow as pa

from ngramflow.transforms.wire import read_table, write_table


class TableCoder(beam.coders.Coder):
    def encode(self, table: pa.Table) -> bytes:
        return write_table(table)

    def decode(self, data: bytes) -> pa.Table:
        return read_table(data)

    def estimate_size(self, table: pa.Table) -> int:
        return table.nbytes

    def is_deterministic(self) -> bool:
        return False


beam.coders.registry.register_coder(pa.Table, TableCoder)
