"""The embedded runner's aggregation through sorted run files (transforms/spill.py).

A tiny spill budget (NGRAMFLOW_SPILL_BYTES) forces many run files per shard and
merges in several passes; the result must be what DuckDB computes, and exactly
what an import with the default budget writes.
"""

import glob
import json
import math
import os
import threading
from types import SimpleNamespace

import apache_beam as beam
import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

import ngramflow
from conftest import (NOT_TAGGED, SAMPLE, assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012,
                      reference_2020, run_cli, vocabulary_of)
from ngramflow import schemas
from ngramflow.schemas import RESERVED_TOKENS, layout
from ngramflow.transforms import columnar, native, runfiles, spill, vocabulary, vocabulary_sort
from ngramflow.transforms.collapse import run_schema
from ngramflow.transforms.merge import merge_runs
from ngramflow.query.dataset import Dataset
from ngramflow.transforms import sizing
from ngramflow.transforms.sizing import (MERGE_FANIN, PART_TOKENS_VARIABLE, RANGE_ROWS_VARIABLE, SPILL_BYTES_VARIABLE,
                                         SPILL_COMPRESSION, spill_compression)

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


def spilled(runs: pa.Table, folder, budget: int, step: int = 2000) -> list:
    spiller = spill.SpillRuns(str(folder), budget, SPILL_COMPRESSION)
    spiller.setup()
    spiller.start_bundle()
    refs = [ref for start in range(0, runs.num_rows, step) for ref in spiller.process(runs.slice(start, step))]
    return refs + [value.value for value in spiller.finish_bundle()]


@pytest.mark.parametrize("as_uri", [False, True], ids=["path", "uri"])
def test_spilled_files_merge_in_passes_to_one_merge_of_everything(tmp_path, as_uri, monkeypatch):
    """Also with the folder as a URI, the way gs:// and s3:// scratch folders are read and written. At a fan-in
    of 4: the passes are the same at any, and two at 16 took 16 s of merge steps of 256 bytes."""
    monkeypatch.setattr(runfiles, "MERGE_FANIN", 4)
    runs, budget = random_runs(8_000, 1), 4 << 10
    folder = tmp_path.as_uri() if as_uri else str(tmp_path)
    refs = spilled(runs, folder, budget)
    assert len(refs) > runfiles.MERGE_FANIN ** 2, "two merge passes at least"
    assert all(r.path.startswith(folder) for r in refs)
    assert sum(ref.rows for ref in refs) == sum(
        pa.ipc.open_file(os.path.join(tmp_path, os.path.basename(r.path))).read_all().num_rows for r in refs)
    pieces = list(runfiles.merged(folder, "pass", refs, merge_runs, budget))
    assert max(p.nbytes for p in pieces) < budget, "pieces are bounded"
    keys = pa.concat_tables(pieces)["ngram"].to_pylist()
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert merge_runs(pa.concat_tables(pieces)).equals(merge_runs(runs))
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(r.path) for r in refs), "passes clean up"


def test_a_few_files_past_the_fan_in_are_merged_by_a_pass_over_the_smallest_alone(tmp_path, monkeypatch):
    """MERGE_FANIN + 2 files whose keys interleave: a pass over the 3 smallest leaves MERGE_FANIN, which one
    merge reads (a pass over the first MERGE_FANIN files rewrote nearly every row)."""
    tables = [merge_runs(random_runs(2000 - 50 * i, seed=i)) for i in range(MERGE_FANIN + 2)]  # smallest last
    refs = [runfiles.write_run_file(str(tmp_path), "runs", [t], 1 << 20, None) for t in tables]
    passes = []
    write = runfiles.write_run_file
    monkeypatch.setattr(runfiles, "write_run_file", lambda *args: passes.append(write(*args)) or passes[-1])
    pieces = list(runfiles.merged(str(tmp_path), "pass", refs, merge_runs, 1 << 20))
    assert [run.rows for run in passes] == [merge_runs(pa.concat_tables(tables[-3:])).num_rows]
    assert merge_runs(pa.concat_tables(pieces)).equals(merge_runs(pa.concat_tables(tables)))
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(r.path) for r in refs), "passes clean up"


def test_a_spiller_given_only_empty_tables_writes_nothing(tmp_path):
    """A table with no rows (a worker's table of tokens all given before) is not held: a buffer of such
    tables once made flush slice its no rows by a step of none."""
    spiller = runfiles.RunSpiller(str(tmp_path), "tokens", vocabulary.merge_tokens, 1 << 20)
    assert spiller.add(vocabulary.TOKENS.empty_table()) == [] and spiller.flush() == []
    assert os.listdir(tmp_path) == []


def _spilling_threads(tmp_path, spare, held: int) -> tuple[list[str], list, pa.Table]:
    """A spiller with SPARE budgets of which HELD are held, given 20 tables of 2,000 run rows, each a budget
    (one spill, one run file each): (the threads of its spills, its run files, the rows they hold)."""
    runs, threads = random_runs(40_000, 7), []
    tables = [runs.slice(start, 2000) for start in range(0, runs.num_rows, 2000)]

    def combine(table):
        threads.append(threading.current_thread().name)
        return merge_runs(table)

    for _ in range(held):
        spare.hold()
    spiller = runfiles.RunSpiller(str(tmp_path), "runs", combine, min(t.nbytes for t in tables), None, spare)
    files = [run for table in tables for run in spiller.add(table)]
    files += spiller.flush()
    rows = pa.concat_tables(pa.ipc.open_file(run.path).read_all() for run in files)
    assert merge_runs(rows).equals(merge_runs(runs)), "every row in the run files, once"
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(run.path) for run in files)
    return threads, files, rows


def test_a_worker_spills_beside_its_adds_on_a_spare_budget_and_gives_it_back(tmp_path):
    """The other worker idle (one budget of two spare): spills run on a thread beside the adds, one at a time
    (the adds go on meanwhile, so some spills are the worker's own), and every budget is given back."""
    spare = runfiles.SpareBudgets(2)
    threads, files, _ = _spilling_threads(tmp_path, spare, held=1)
    beside = [name for name in threads if name.startswith("spill")]
    assert len(threads) == len(files) == 20 and beside, threads
    spare.give()
    assert spare.spare == 2


def test_workers_that_all_hold_their_budgets_spill_on_their_own_threads(tmp_path):
    """No budget spare: each spill is the worker's own, as without spare budgets."""
    spare = runfiles.SpareBudgets(2)
    threads, files, _ = _spilling_threads(tmp_path, spare, held=2)
    assert threads == [threading.current_thread().name] * len(files) and len(files) == 20
    assert not spare.take()


@pytest.mark.parametrize("batches", [2, 1.5], ids=["two parts", "whole"])
def test_a_last_flush_merges_its_buffer_in_parts_at_once_each_on_a_thread(tmp_path, batches):
    """flush(2): a buffer that holds two batches of a run file (budget / MERGE_FANIN bytes each) is merged in
    two parts at once, one on the flushing thread and one on a spill thread, a run file each; a smaller one
    whole, on the flushing thread. Either way every row is in the files once."""
    runs, threads = random_runs(40_000, 3), []

    def combine(table):
        threads.append(threading.current_thread().name)
        return merge_runs(table)

    spiller = runfiles.RunSpiller(str(tmp_path), "runs", combine, int(runs.nbytes * MERGE_FANIN / batches), None)
    assert spiller.add(runs) == []
    files = spiller.flush(2)
    here = threading.current_thread().name
    if batches == 2:
        assert len(files) == 2 and here in threads and any(name.startswith("spill") for name in threads), threads
    else:
        assert len(files) == 1 and threads == [here]
    rows = pa.concat_tables(pa.ipc.open_file(run.path).read_all() for run in files)
    assert merge_runs(rows).equals(merge_runs(runs)) and sum(run.rows for run in files) == rows.num_rows
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(run.path) for run in files)


@pytest.mark.parametrize("other_idle", [True, False], ids=["other worker idle", "other worker reading"])
def test_a_workers_last_flush_is_in_parts_only_while_another_worker_is_idle(tmp_path, other_idle):
    """With spare budgets (the embedded runner's workers), a flush takes a part more for each idle worker, whose
    budget is spare: a worker that ends while the other still reads flushes whole (each part is a run file more
    for the merges)."""
    runs, spare = random_runs(40_000, 3), runfiles.SpareBudgets(2)
    for _ in range(1 if other_idle else 2):  # this worker's budget, and the other's while it reads
        spare.hold()
    spiller = runfiles.RunSpiller(str(tmp_path), "runs", merge_runs, runs.nbytes * MERGE_FANIN // 2, None, spare)
    assert spiller.add(runs) == []
    files = spiller.flush(2)
    assert len(files) == (2 if other_idle else 1)
    assert merge_runs(pa.concat_tables(pa.ipc.open_file(run.path).read_all() for run in files)).equals(merge_runs(runs))


def test_ascending_runs_write_tables_as_they_come_and_begin_a_file_where_keys_go_back(tmp_path):
    """Tables each sorted and apart: one file while each table's first key is above the file's last, a new
    one where it is not (equal included); empty tables change nothing; the files hold the tables' rows."""
    runs = merge_runs(random_runs(3_000, 5))
    quarter = runs.num_rows // 4
    a, b, c, d = (runs.slice(start * quarter, quarter if start < 3 else None) for start in range(4))
    last_of_b = b.slice(b.num_rows - 1)
    writer = runfiles.AscendingRuns(str(tmp_path), "unigrams", 1 << 20)
    assert writer.add(a) == [] and writer.add(runs.slice(0, 0)) == [] and writer.add(c) == []
    (first,) = writer.add(b)  # b's keys lie below c's
    (second,) = writer.add(last_of_b)  # its key is the file's last
    assert writer.add(d) == []
    (third,) = writer.flush()
    assert writer.flush() == [] and len(os.listdir(tmp_path)) == 3
    for run, tables in [(first, [a, c]), (second, [b]), (third, [last_of_b, d])]:
        expected = pa.concat_tables(tables).combine_chunks()
        assert pa.ipc.open_file(run.path).read_all().equals(expected)
        assert (run.first, run.last, run.rows) == (expected["ngram"][0].as_py(), expected["ngram"][-1].as_py(),
                                                   expected.num_rows)


@pytest.mark.parametrize("as_uri", [False, True], ids=["path", "uri"])
def test_rows_before_a_key_are_counted_from_the_batches(tmp_path, as_uri):
    """A local run file is mapped, one behind a URI read through its file system: the same counts."""
    runs = merge_runs(random_runs(5_000, 2))
    folder = tmp_path.as_uri() if as_uri else str(tmp_path)
    run = runfiles.write_run_file(folder, "runs", [runs], 64 << 10)
    assert len(run.batches) > 3
    keys = runs["ngram"].to_pylist()
    for key in [None, "", "w", keys[0], keys[len(keys) // 3], keys[-1], "w999 t9", "x", *keys[1::997]]:
        assert runfiles.rows_before(run, key) == (0 if key is None else sum(k < key for k in keys)), key


def test_planned_ranges_hold_like_rows_when_cuts_split_batches(tmp_path):
    """Eight run files over one key space, in batches of an eighth of a range: each cut splits a batch of each
    file, whose rows lie about half on either side. Counted at its first key, a split batch was all before
    the cut: the first range was a fifth short of the others and the last a fifth over."""
    runs = [runfiles.write_run_file(str(tmp_path), "runs", [merge_runs(random_runs(20_000 + 4_000 * seed, seed))],
                                    1 << 20) for seed in range(8)]  # files of unlike lengths: unlike batch bounds
    assert all(len(run.batches) > 5 for run in runs)
    total = sum(run.rows for run in runs)
    ranges = spill.plan_ranges(runs, total // 6 + 1, workers=2)
    held = [sum(runfiles.rows_before(run, hi) if hi else run.rows for run in runs)
            - sum(runfiles.rows_before(run, lo) for run in runs) for _, _, lo, hi, _ in ranges]
    assert len(held) == 6 and sum(held) == total
    assert max(held) < 1.2 * min(held), held


@pytest.mark.parametrize("range_rows, workers", [(300, 1), (3000, 1), (10 ** 9, 1), (3000, 3)])
def test_ranges_cover_every_ngram_once_in_order(tmp_path, range_rows, workers):
    runs, budget = random_runs(12_000, 2), 16 << 10
    refs = spilled(runs, tmp_path, budget, step=1500)
    ranges = spill.plan_ranges(refs, range_rows, workers)
    assert [r.index for r in ranges] == list(range(len(ranges))) and {r.count for r in ranges} == {len(ranges)}
    assert ranges[0].lo is None and ranges[-1].hi is None
    assert all(r.hi == following.lo for r, following in zip(ranges, ranges[1:])), "consecutive ranges"
    total = sum(ref.rows for ref in refs)
    if range_rows < total:
        planned = math.ceil(math.ceil(total / range_rows) / workers) * workers  # in whole rounds of workers
        assert len(ranges) > 1 and len(ranges) <= planned
    pieces = []
    for _, _, lo, hi, overlapping in ranges:
        merged = list(runfiles.merged(str(tmp_path), "pass", overlapping, merge_runs, budget, lo, hi))
        keys = [k for t in merged for k in t["ngram"].to_pylist()]
        assert all((lo is None or k >= lo) and (hi is None or k < hi) for k in keys)
        pieces += merged
    assert merge_runs(pa.concat_tables(pieces)).equals(merge_runs(runs))
    keys = pa.concat_tables(pieces)["ngram"].to_pylist()
    assert keys == sorted(keys) and len(set(keys)) == len(keys), "ranges in order, each n-gram in one"


@pytest.mark.parametrize("workers", [1, 2])
def test_a_merging_thread_gives_each_token_once_over_all_of_its_ranges(tmp_path, workers):
    # "t0".."t6" end n-grams of every range: a token spiller of each range's own gave them once a range.
    runs = random_runs(12_000, 4)
    refs = spilled(runs, tmp_path / "runs", 16 << 10, step=1500)
    ranges = spill.MergeRanges(1, str(tmp_path / "runs"), 8 << 20, str(tmp_path / "out"), schemas.NGRAMS, None,
                               SPILL_COMPRESSION, range_rows=1500, workers=workers)
    outputs = list(ranges.process(refs))
    (token_runs,) = [o.value for o in outputs if isinstance(o, beam.pvalue.TaggedOutput) and o.tag == spill.TOKEN_RUNS]
    parts = [o for o in outputs if not isinstance(o, beam.pvalue.TaggedOutput)]
    assert len({part["file"] for part in parts}) >= 4 * workers  # ranges enough to repeat the tokens
    tokens = [t for run in token_runs for t in pa.ipc.open_file(run.path).read_all()["token"].to_pylist()]
    distinct = {t for ngram in runs["ngram"].to_pylist() for t in ngram.split(" ")}
    assert set(tokens) == distinct
    assert len(tokens) <= workers * len(distinct)  # at most once a thread


def test_vocabulary_by_external_sort_equals_build_vocabulary(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    words = [f"w{k}" for k in range(3000)] + ["é", "_START_", "zz"]
    grams = sorted({" ".join(rng.choice(words, n)) for n in rng.integers(1, 4, 6000)} | {"_START_", "é"})
    counts = rng.integers(1, 50, len(grams))  # many equal counts: their ids follow the tokens' bytes
    ngrams = pa.table({"ngram": grams, "order": native.orders(pa.array(grams)),
                       "match_count": counts, "volume_count": counts // 2 + 1})
    monkeypatch.setenv(PART_TOKENS_VARIABLE, "700")
    budget = 8 << 10
    # The tokens as a worker gives them, a piece of a range's merge at a time (a table of each order, its
    # unigrams written to an n-gram file of their own): each table's less those it gave lately (most, here:
    # 3,000 words), in runs small enough to be many; the unigram rows ranked as they come. Two pieces hold
    # unigrams alone: the first, before any longer n-gram, is named (its file read by the merge pass), the
    # other written to a unigram run.
    tokens = vocabulary.TokenRuns(str(tmp_path), budget // 4)
    pieces = [ngrams.slice(start, 500) for start in range(0, ngrams.num_rows, 500)]
    for alone in (0, 3):
        pieces[alone] = pieces[alone].filter(pc.equal(pieces[alone]["order"], 1))
    runs = []
    for index, piece in enumerate(pieces):
        tables = [piece.filter(pc.equal(piece["order"], order)) for order in (1, 2, 3)]
        unigrams = str(tmp_path / f"unigrams-{index}.parquet")
        pq.write_table(tables[0], unigrams)
        runs += tokens.add(tables, unigrams)
    runs += tokens.flush()
    assert sum(run.kind == "tokens" for run in runs) > MERGE_FANIN, "a merge pass of token runs"
    assert sum(run.kind == "ranked" for run in runs) > 1
    assert [run.path for run in runs if run.kind == "unigram-file"] == [str(tmp_path / "unigrams-0.parquet")]
    assert any(run.kind == "unigrams" for run in runs)
    ranges = vocabulary_sort.plan_token_ranges(runs, 1500, 2, str(tmp_path), budget)
    assert len(ranges) > 1, "several token ranges"
    seen_reserved, ranked = vocabulary_sort.ranked_while_read(runs, str(tmp_path), budget)
    for planned in ranges:
        ranked += vocabulary_sort.rank_token_range(planned, str(tmp_path), budget)
    root = str(tmp_path / "vocabulary")
    vocabulary_sort.write_reserved(seen_reserved, root)
    corpus = sum(vocabulary_sort.number_id_range(planned, str(tmp_path), budget, root, 700)
                 for planned in vocabulary_sort.plan_id_ranges(ranked, 700, workers=1))
    written = [tuple(row.values()) for row in pq.read_table(tmp_path / "vocabulary").to_pylist()]
    assert corpus == len(written) - len(RESERVED_TOKENS) > 2000
    numbered = sorted(name for name in os.listdir(tmp_path / "vocabulary") if name != "part-reserved.parquet")
    assert len(numbered) >= -(-corpus // 700)
    next_id = len(RESERVED_TOKENS)
    for name in numbered:  # at most PART_TOKENS tokens a file, named by its first id, ids consecutive
        ids = pq.read_table(tmp_path / "vocabulary" / name)["id"].to_pylist()
        assert name == f"part-{next_id:012d}.parquet" and ids == list(range(next_id, next_id + len(ids))) and len(ids) <= 700
        next_id += len(ids)
    with TestPipeline() as p:
        given = pa.concat_tables(pieces)
        rows = (p | beam.Create([(0, given.slice(0, 4000)), (1, given.slice(4000))])
                | vocabulary.BuildVocabulary(shards=3)
                | beam.FlatMapTuple(lambda _name, t: [tuple(r.values()) for r in t.to_pylist()]))
        assert_that(rows, equal_to(written))


@pytest.fixture
def tiny_budget(monkeypatch):
    monkeypatch.setenv(SPILL_BYTES_VARIABLE, str(TINY))
    monkeypatch.setenv(RANGE_ROWS_VARIABLE, "400")


def check_ranges(dataset: str, manifest: dict) -> None:
    """Each part file is one sorted n-gram range, as the manifest says; ranges of an order are disjoint,
    in order, and cover its n-grams; a point look-up reads the one file that holds the n-gram."""
    ds, api = Dataset(dataset), ngramflow.open_dataset(dataset)
    for order, ranges in manifest["ranges"].items():
        assert len(ranges) > 1, "several ranges"
        assert sorted(r[0] for r in ranges) == sorted(os.path.relpath(p, dataset) for p in
                                                      glob.glob(f"{dataset}/{layout.ngrams_folder(order)}/*"))
        for (name, first, last), following in zip(ranges, ranges[1:] + [None]):
            rows = pq.read_table(os.path.join(dataset, name), columns=["ngram", "match_count"])
            keys = rows["ngram"].to_pylist()
            assert keys == sorted(keys) and keys[0] == first and keys[-1] == last
            assert api.count(keys[len(keys) // 2])["match_count"][0] == rows["match_count"][len(keys) // 2]
            assert following is None or last < following[1]
            for key in (first, keys[len(keys) // 2], last):
                assert ds.ngrams_of_order(int(order), key, key + "\0") == \
                    f"read_parquet(['{os.path.join(os.path.abspath(dataset), name)}'])"
        assert ds.ngrams_of_order(int(order), "\x01", "\x02") is None, "no file holds keys below every n-gram"


def test_run_files_are_compressed_unless_the_local_disk_has_room_to_spare(tmp_path):
    free = __import__("shutil").disk_usage(tmp_path).free
    room = free // (sizing.EXPANSION * sizing.UNCOMPRESSED_SPILL_ROOM)
    not_yet = str(tmp_path / "out" / "_build" / "_spill")  # the folder is made later: its disk is asked
    assert spill_compression(room, not_yet, shared=False) is None
    assert spill_compression(room * 2, not_yet, shared=False) == SPILL_COMPRESSION
    assert spill_compression(1, not_yet, shared=True) == SPILL_COMPRESSION, "other machines read it"
    assert spill_compression(1, "s3://bucket/out/_build/_spill", shared=False) == SPILL_COMPRESSION, "sent"


@pytest.mark.parametrize("room", [0, 10**15], ids=["uncompressed", "lz4"])
def test_tiny_budget_2012_equals_duckdb(tiny_budget, tmp_path, capsys, monkeypatch, room):
    monkeypatch.setattr(sizing, "UNCOMPRESSED_SPILL_ROOM", room)  # no disk has 10^15 times the input free
    assert run_cli("import", SAMPLE_2012, "--output", tmp_path / "out") == 0
    dataset = str(tmp_path / "out")
    assert_same_rows(ngrams_of(dataset), reference_2012(gz_files(SAMPLE_2012), where=NOT_TAGGED))
    manifest = json.load(open(os.path.join(dataset, layout.MANIFEST)))
    totalled = manifest["aggregation"]
    assert totalled["method"] == "sorted runs spilled to disk"
    assert totalled["run_compression"] == ("none" if room == 0 else SPILL_COMPRESSION)
    assert totalled["run_files"] > MERGE_FANIN, "more run files than one merge reads"
    assert f"aggregation: sorted runs spilled to disk in {totalled['scratch']}" in capsys.readouterr().out
    assert not os.path.exists(os.path.join(dataset, layout.SPILL))
    assert not any(layout.SPILL in name for name in manifest["files"])
    check_ranges(dataset, manifest)


def test_one_file_spills_beside_its_reading_on_the_idle_workers_budget(tiny_budget, tmp_path, monkeypatch):
    """The sample's files joined into one, read by one of two workers: it spills beside its reading on the budget
    of the worker with nothing to read (runfiles.SpareBudgets), and the totals are DuckDB's."""
    one = tmp_path / "joined.gz"
    with open(one, "wb") as out:
        for path in gz_files(SAMPLE_2012):
            out.write(open(path, "rb").read())
    pool, beside = runfiles._BESIDE, []
    monkeypatch.setattr(runfiles, "_BESIDE", SimpleNamespace(
        submit=lambda spill, *args: beside.append(spill) or pool.submit(spill, *args)))
    assert run_cli("import", one, "--output", tmp_path / "out", "--workers", "2", "--quiet") == 0
    assert beside, "no spill beside the reading"
    assert_same_rows(ngrams_of(str(tmp_path / "out")), reference_2012(gz_files(SAMPLE_2012), where=NOT_TAGGED))


def test_tiny_budget_2020_equals_duckdb(tiny_budget, tmp_path):
    dataset = import_ok(SAMPLE_2020, tmp_path / "out", "--pos", "keep")
    assert_same_rows(ngrams_of(dataset), reference_2020(gz_files(SAMPLE_2020)))
    check_ranges(dataset, json.load(open(os.path.join(dataset, layout.MANIFEST))))


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
