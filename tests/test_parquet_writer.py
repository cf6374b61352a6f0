"""The n-gram and vocabulary files' Parquet writer (native/src/parquet.rs, through transforms/sinks.py) against
independent readers: pyarrow and DuckDB read its files back as the tables written, with the statistics Arrow's
own writer gives the same rows."""

import pathlib
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ngramflow.schemas import NGRAMS, VOCABULARY
from ngramflow.transforms import sinks
from conftest import SAMPLE, import_ok

LIMITS = {pa.int8(): 2**7, pa.int16(): 2**15, pa.int64(): 2**63}
WORDS = ["", "a", "ab", "abc", "b", "é", "ü b", "of the united states", "of the united state", "\u4e2d\u6587",
         "x" * 40, "x" * 39 + "y"]


def _key(rng: random.Random) -> str:
    if rng.random() < 0.01:
        return "long " * rng.randrange(200, 1200)  # past the statistics' 4096 bytes, or a page's share
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4)))


def _value(rng: random.Random, field: pa.Field) -> int:
    limit = LIMITS[field.type]
    return rng.choice([-limit, limit - 1, 0, -1, 1, rng.randrange(-limit, limit), rng.randrange(1900, 2020) % limit])


def _table(rng: random.Random, rows: int, ordered: bool) -> pa.Table:
    keys = [_key(rng) for _ in range(rows)]
    if ordered:
        keys.sort(key=str.encode)  # the n-gram files' order: UTF-8 bytes
    columns = [keys] + [[_value(rng, field) for _ in range(rows)] for field in list(NGRAMS)[1:]]
    return pa.table(columns, schema=NGRAMS)


def _written(table: pa.Table, path, writer, row_group_rows: int):
    with pa.OSFile(str(path), "wb") as fh, writer(fh, table.schema) as written:
        for start in range(0, table.num_rows, 997):  # several writes, as a part file's pieces come
            written.write_table(table.slice(start, 997), row_group_size=row_group_rows)
    return pq.ParquetFile(str(path))


def _arrow_writer(fh, schema):
    return pq.ParquetWriter(fh, schema, **sinks._parquet(schema))


def _vocabulary(rng: random.Random, rows: int) -> pa.Table:
    """Vocabulary rows in id order: counts descending, then nulls (tokens with no unigram), a few nulls
    elsewhere too (the reserved ids' file has them first), and now and then a column of nulls alone."""
    counts = sorted((rng.randrange(40, 10**rng.randrange(2, 12)) for _ in range(rows)), reverse=True)
    counted = rng.choice([rows, rows - rows // 3, 0, rng.randrange(rows + 1)])
    matches = [c if i < counted and rng.random() > 0.01 else None for i, c in enumerate(counts)]
    volumes = [None if m is None else rng.randrange(1, m + 1) for m in matches]
    tokens = [_key(rng).replace(" ", "") for _ in range(rows)]
    return pa.table([list(range(3, 3 + rows)), tokens, matches, volumes], schema=VOCABULARY)


def _same_as_arrows(ours: pq.ParquetFile, arrows: pq.ParquetFile, table: pa.Table) -> None:
    """OURS reads back as TABLE, with the row groups and statistics of ARROWS, the same rows by Arrow's writer."""
    assert ours.metadata.created_by == sinks.CREATED_BY
    back = ours.read()
    assert back.schema == table.schema
    assert back.equals(table)
    assert ours.metadata.num_row_groups == arrows.metadata.num_row_groups
    for group in range(ours.metadata.num_row_groups):
        for column in range(len(table.schema)):
            got = ours.metadata.row_group(group).column(column)
            expected = arrows.metadata.row_group(group).column(column)
            assert got.num_values == expected.num_values
            assert got.statistics.has_min_max == expected.statistics.has_min_max, (group, column)
            if expected.statistics.has_min_max:
                assert (got.statistics.min, got.statistics.max) == (expected.statistics.min, expected.statistics.max)
            assert got.statistics.null_count == expected.statistics.null_count


def _read_by_duckdb(path, table: pa.Table) -> duckdb.DuckDBPyConnection:
    """DuckDB reads the file at PATH as TABLE; the connection, for more."""
    listed, db = ", ".join(f'"{name}"' for name in table.schema.names), duckdb.connect()
    read = db.sql(f"SELECT {listed} FROM '{path}'").fetchall()
    assert read == [tuple(row.values()) for row in table.to_pylist()]
    return db


@pytest.mark.parametrize("seed", range(6))
def test_the_kernels_files_read_back_as_written_with_arrows_statistics(seed, tmp_path):
    rng = random.Random(seed)
    rows = rng.choice([1, 2, 127, 129, 3000, 40_000])
    table = _table(rng, rows, ordered=seed % 3 != 0)
    row_group_rows = rng.choice([100, 1000, 32 * 1024])
    ours = _written(table, tmp_path / "kernel.parquet", sinks._KernelWriter, row_group_rows)
    arrows = _written(table, tmp_path / "arrow.parquet", _arrow_writer, row_group_rows)
    _same_as_arrows(ours, arrows, table)
    db = _read_by_duckdb(tmp_path / "kernel.parquet", table)
    # DuckDB's row-group pruning trusts the statistics: a point look-up finds each of a few keys
    for key in rng.sample(table["ngram"].to_pylist(), min(5, rows)):
        expected = table["ngram"].to_pylist().count(key)
        found = db.execute(f"SELECT count(*) FROM '{tmp_path / 'kernel.parquet'}' WHERE ngram = ?",
                           [key]).fetchall()[0][0]
        assert found == expected


@pytest.mark.parametrize("seed", range(6))
def test_vocabulary_files_with_null_counts_read_back_as_written(seed, tmp_path):
    """Optional columns: each page's definition levels, the values of its defined rows, the chunks' null counts
    and the min and max of their values, as Arrow's writer gives them; DuckDB sums what pyarrow reads."""
    rng = random.Random(seed)
    rows = rng.choice([1, 2, 127, 129, 3000, 40_000, 300_000])  # the last: pages cut within a row group
    table = _vocabulary(rng, rows)
    row_group_rows = rng.choice([100, 1000, 32 * 1024, 1 << 20])
    assert isinstance(sinks._writer(pa.BufferOutputStream(), VOCABULARY), sinks._KernelWriter)
    ours = _written(table, tmp_path / "kernel.parquet", sinks._writer, row_group_rows)
    arrows = _written(table, tmp_path / "arrow.parquet", _arrow_writer, row_group_rows)
    _same_as_arrows(ours, arrows, table)
    db = _read_by_duckdb(tmp_path / "kernel.parquet", table)
    sums = db.sql(f"SELECT count(match_count), sum(match_count), sum(volume_count) FROM '{tmp_path / 'kernel.parquet'}'")
    counted = [m for m in table["match_count"].to_pylist() if m is not None]
    volumes = [v for v in table["volume_count"].to_pylist() if v is not None]
    assert sums.fetchall() == [(len(counted), sum(counted) if counted else None, sum(volumes) if volumes else None)]


def test_keys_of_megabytes_cut_pages_and_drop_the_statistics_they_would_be(tmp_path):
    """Keys past a page's megabyte between short ones: the chunk is cut into pages; a min or max of more than
    4096 bytes is left out, as Arrow leaves it out, and the other kept."""
    keys = ["a", "b" * (1 << 20), "c", "d" * 5000, "e" * (3 << 19), "f", "g", "h"]
    table = pa.table([keys] + [list(range(len(keys)))] * (len(NGRAMS) - 1), schema=NGRAMS)
    for rows in (2, 3, 8):
        ours = _written(table, tmp_path / "kernel.parquet", sinks._KernelWriter, rows)
        arrows = _written(table, tmp_path / "arrow.parquet", _arrow_writer, rows)
        assert ours.read().equals(table)
        for group in range(ours.metadata.num_row_groups):
            got, expected = (f.metadata.row_group(group).column(0).statistics for f in (ours, arrows))
            assert (got.min, got.max) == (expected.min, expected.max)
    assert (got.min, got.max) == ("a", "h")  # one row group of all the keys


def test_an_imports_n_gram_and_vocabulary_files_are_the_kernels(tmp_path):
    out = import_ok(SAMPLE, tmp_path / "out")
    for files in ("ngrams/order=*/*.parquet", "vocabulary/*.parquet"):
        parts = sorted(pathlib.Path(out).glob(files))
        assert parts
        for part in parts:
            assert pq.ParquetFile(part).metadata.created_by == sinks.CREATED_BY


def _in_pieces(rng: random.Random, table: pa.Table) -> pa.Table:
    """TABLE as chunks of random sizes, each a slice of a larger table (its buffers begin before its rows),
    empty ones among them: as a part file's pieces are joined before their row groups are cut."""
    pieces, start = [], 0
    while start < table.num_rows:
        rows = rng.choice([0, 1, 7, 300, 5000])
        padded = pa.concat_tables([table.slice(0, 3), table.slice(start, rows)]).combine_chunks()
        pieces.append(padded.slice(min(3, table.num_rows), min(rows, table.num_rows - start)))
        start += rows
    return pa.concat_tables(pieces)


@pytest.mark.parametrize("seed", range(6))
def test_a_table_in_chunks_is_written_as_the_same_table_in_one(seed, tmp_path):
    """The kernel joins a row group's columns of several chunks itself: the file is byte for byte the one of
    the same rows in one chunk each, n-grams and vocabulary (nulls in some chunks and not in others)."""
    rng = random.Random(seed)
    rows = rng.choice([129, 3000, 40_000])
    for table in (_table(rng, rows, ordered=True), _vocabulary(rng, rows)):
        chunked = _in_pieces(rng, table)
        assert chunked.equals(table) and max(c.num_chunks for c in chunked.columns) > 1
        row_group_rows = rng.choice([100, 1000, 32 * 1024])
        files = [tmp_path / "one.parquet", tmp_path / "chunks.parquet"]
        for rows_of, path in zip((table, chunked), files):
            with pa.OSFile(str(path), "wb") as fh, sinks._KernelWriter(fh, table.schema) as written:
                written.write_table(rows_of, row_group_size=row_group_rows)
        assert files[0].read_bytes() == files[1].read_bytes()
        assert pq.read_table(files[1]).equals(table)
