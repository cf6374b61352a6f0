"""The embedded runner's aggregation through sorted run files (transforms/spill.py).

A tiny spill budget (NGRAMFLOW_SPILL_BYTES) forces many run files per shard and
merges in several passes; the result must be what DuckDB computes, and exactly
what an import with the default budget writes.
"""

import json
import os

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import (NOT_TAGGED, SAMPLE, assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012,
                      reference_2020, run_cli, vocabulary_of)
from ngramflow.schemas import layout
from ngramflow.transforms import columnar, spill
from ngramflow.transforms.collapse import run_schema
from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.sizing import MERGE_FANIN, SPILL_BYTES_VARIABLE

TINY = 16 << 10
SAMPLE_2012, SAMPLE_2020 = os.path.join(SAMPLE, "2012"), os.path.join(SAMPLE, "2020")


def random_runs(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    masks = np.zeros((rows, columnar.MASK_BYTES), np.uint8)
    masks[np.arange(rows), rng.integers(0, columnar.MASK_BYTES, rows)] = 1
    return pa.Table.from_arrays([
        pa.array([f"w{k} t{k % 7}" for k in rng.integers(0, rows // 3, rows)]),
        pa.array(rng.integers(1, 1000, rows)), pa.array(rng.integers(1, 100, rows)), columnar.mask_array(masks),
    ], schema=run_schema(False))


def test_spilled_files_merge_in_passes_to_one_merge_of_everything(tmp_path):
    runs, budget, shards = random_runs(20_000, 1), 8 << 10, 2
    spiller = spill.SpillRuns(str(tmp_path), shards, budget)
    spiller.setup()
    spiller.start_bundle()
    refs = [ref for start in range(0, runs.num_rows, 2000) for ref in spiller.process(runs.slice(start, 2000))]
    refs += [value.value for value in spiller.finish_bundle()]
    by_shard = {}
    for shard, path in refs:
        by_shard.setdefault(shard, []).append(path)
    assert min(len(paths) for paths in by_shard.values()) > MERGE_FANIN ** 2, "two merge passes at least"
    totals = []
    for shard, paths in by_shard.items():
        pieces = list(spill.merged_pieces(str(tmp_path), shard, paths, budget))
        assert max(p.nbytes for p in pieces) < budget, "pieces are bounded"
        keys = pa.concat_tables(pieces)["ngram"]
        assert keys.to_pylist() == sorted(keys.to_pylist()) and len(set(keys.to_pylist())) == len(keys)
        totals += pieces
    assert merge_runs(pa.concat_tables(totals)).equals(merge_runs(runs))
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for _, p in refs), "passes clean up"


@pytest.fixture
def tiny_budget(monkeypatch):
    monkeypatch.setenv(SPILL_BYTES_VARIABLE, str(TINY))


def test_tiny_budget_2012_equals_duckdb(tiny_budget, tmp_path, capsys):
    assert run_cli("import", SAMPLE_2012, "--output", tmp_path / "out") == 0
    dataset = str(tmp_path / "out")
    assert_same_rows(ngrams_of(dataset), reference_2012(gz_files(SAMPLE_2012), where=NOT_TAGGED))
    manifest = json.load(open(os.path.join(dataset, layout.MANIFEST)))
    totalled = manifest["aggregation"]
    assert totalled["method"] == "sorted runs spilled to disk"
    assert totalled["run_files"] > 2 * MERGE_FANIN, "more run files per shard (2 shards) than one merge reads"
    assert f"aggregation: sorted runs spilled to disk in {totalled['scratch']}" in capsys.readouterr().out
    assert not os.path.exists(os.path.join(dataset, layout.SPILL))
    assert not any(layout.SPILL in name for name in manifest["files"])
    parts = [os.path.join(dataset, name) for name in manifest["files"] if name.startswith(layout.NGRAMS + "/")]
    assert len(parts) > 2
    for part in parts:
        keys = pq.read_table(part, columns=["ngram"])["ngram"].to_pylist()
        assert keys == sorted(keys), f"{part} is sorted by n-gram"


def test_tiny_budget_2020_equals_duckdb(tiny_budget, tmp_path):
    dataset = import_ok(SAMPLE_2020, tmp_path / "out", "--pos", "keep")
    assert_same_rows(ngrams_of(dataset), reference_2020(gz_files(SAMPLE_2020)))


def content(dataset) -> dict:
    """Every Parquet row of the dataset by folder, sorted, every file's name, and the manifest's totals."""
    manifest = json.load(open(os.path.join(dataset, layout.MANIFEST)))
    folders = {os.path.dirname(name) for name in manifest["files"] if name.endswith(".parquet")}
    rows = {folder: duckdb.sql(f"SELECT * FROM read_parquet('{dataset}/{folder}/*.parquet', hive_partitioning=false)"
                               " ORDER BY ALL").fetchall() for folder in folders}
    return {"rows": rows, "files": sorted(manifest["files"]), "orders": manifest["orders"],
            "mkn": manifest.get("mkn", {}).get("orders")}


@pytest.mark.parametrize("options", [
    ("--keep-years",), ("--lowercase",), ("--min-count", "40"), ("--mkn-order", "2"),
], ids=lambda options: options[0])
def test_tiny_budget_equals_default_budget(tmp_path, monkeypatch, options):
    default = import_ok(SAMPLE_2012, tmp_path / "default", *options)
    monkeypatch.setenv(SPILL_BYTES_VARIABLE, str(TINY))
    tiny = import_ok(SAMPLE_2012, tmp_path / "tiny", *options)
    assert content(tiny) == content(default)
    assert vocabulary_of(tiny) == vocabulary_of(default)
