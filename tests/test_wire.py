"""Tables cross the runner as LZ4-compressed Arrow IPC (transforms/wire.py): the same table back, in
fewer bytes than its buffers, whatever pickles it (Beam's coder of a grouped value, a tuple)."""

import pickle

import apache_beam as beam
import numpy as np
import pyarrow as pa

from ngramflow.transforms import columnar, wire  # noqa: F401  (registers how tables are pickled)


def run_table(rows: int) -> pa.Table:
    """A run table as the read stage makes it: n-grams sharing prefixes, counts, a year set per run."""
    ngrams = pa.array([f"token{i // 7} other{i % 7}" for i in range(rows)])
    masks = np.zeros((rows, 88), np.uint8)
    masks[:, 80] = 1 << (np.arange(rows) % 8)
    return pa.table({"ngram": ngrams, "match": pa.array(np.arange(rows, dtype=np.int64)),
                     "volume": pa.array(np.ones(rows, np.int64)), "years": columnar.mask_array(masks)})


def test_a_table_comes_back_equal_and_smaller():
    table = run_table(50_000).replace_schema_metadata({b"kind": b"runs"})
    data = pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL)
    back = pickle.loads(data)
    assert back.equals(table) and back.schema.metadata == {b"kind": b"runs"}
    assert len(data) < table.nbytes / 2


def test_slices_chunks_and_empty_tables_come_back_equal():
    table = run_table(1_000)
    chunked = pa.concat_tables([table.slice(0, 10), table.slice(500, 20)])
    for case in (table.slice(990, 5), chunked, table.schema.empty_table(), table.slice(3, 0)):
        back = pickle.loads(pickle.dumps(case))
        assert back.equals(case) and back.schema == case.schema
    # A slice carries its own rows, not its parent's buffers.
    assert len(pickle.dumps(table.slice(0, 10))) < len(pickle.dumps(table)) / 10


def test_beams_coder_of_a_grouped_value_uses_it():
    coder = beam.coders.registry.get_coder(beam.typehints.Any)
    table = run_table(20_000)
    element = (7, [table, table.slice(5, 5)])
    encoded = coder.encode(element)
    key, (first, second) = coder.decode(encoded)
    assert key == 7 and first.equals(table) and second.equals(table.slice(5, 5))
    assert len(encoded) < table.nbytes / 2
