"""The scale-corpus generator: its layout and order, its cache, and the import's totals against DuckDB's."""

import gzip
import hashlib
import os

import pytest
from conftest import assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012, reference_2020

from ngramflow.corpus.scale import STAMP, generate

# Small, but several blocks per file in every shape (scale.BLOCK_ROWS rows per block).
SIZES = {"a": 400_000, "b": 300_000, "c": 400_000}


@pytest.fixture(scope="module", params=sorted(SIZES))
def corpus(request, tmp_path_factory):
    out = str(tmp_path_factory.mktemp(f"scale-{request.param}"))
    return request.param, out, generate(out, request.param, SIZES[request.param], seed=5)


def _lines(path) -> list[bytes]:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    assert data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def test_counts_and_order(corpus):
    shape, out, stamp = corpus
    files = [os.path.join(out, name) for name in sorted(stamp["files"])]
    assert files == gz_files(out)
    keys, rows = [], 0
    for path in files:
        lines = [line.split(b"\t") for line in _lines(path)]
        if shape == "a":  # one row per year; an n-gram's rows contiguous, years ascending
            rows += len(lines)
            file_keys = [(ngram, int(year)) for ngram, year, _, _ in lines]
            assert file_keys == sorted(set(file_keys))
            keys += list(dict.fromkeys(ngram for ngram, _ in file_keys))
        else:  # one line per n-gram, its tuples' years ascending; shape b: 1-3 tuples
            rows += sum(len(fields) - 1 for fields in lines)
            assert all(1 <= len(f) - 1 <= (3 if shape == "b" else 504) for f in lines)
            assert all([int(t.split(b",")[0]) for t in f[1:]] == sorted({int(t.split(b",")[0]) for t in f[1:]})
                       for f in lines)
            keys += [fields[0] for fields in lines]
    assert rows == stamp["rows"] and len(keys) == len(set(keys)) == stamp["distinct"]
    if shape == "a":
        assert stamp["distinct"] == SIZES["a"] // 59
        assert {"pos", "punctuation", "other", "a", "z", "7"} <= {f.rsplit("-", 1)[1][:-3] for f in files}
        assert any(b"_NOUN" in k for k in keys) and b"_START_" in keys and b"_END_" in keys
    else:  # range partitions: the shards in name order hold one sorted sequence
        assert keys == sorted(keys) and abs(rows - SIZES[shape]) < SIZES[shape] // 100
    if shape == "c":  # shape a's 1-grams, a line each
        assert stamp["distinct"] == SIZES["c"] // 34 and rows == SIZES["c"]
        assert b"_START_" in keys and any(b"_NOUN" in k for k in keys)


def test_import_matches_duckdb(corpus, tmp_path):
    shape, out, stamp = corpus
    dataset = import_ok(out, tmp_path / "ds", "--pos", "keep")
    reference = reference_2012 if shape == "a" else reference_2020
    assert_same_rows(ngrams_of(dataset), reference(gz_files(out)))


def _digest(folder) -> str:
    digest = hashlib.sha256()
    for path in gz_files(folder):
        with gzip.open(path, "rb") as fh:
            digest.update(os.path.basename(path).encode() + fh.read())
    return digest.hexdigest()


def test_deterministic_and_cached(corpus, tmp_path):
    shape, out, stamp = corpus
    again = generate(str(tmp_path / "again"), shape, SIZES[shape], seed=5)
    assert _digest(tmp_path / "again") == _digest(out)
    assert {k: again[k] for k in ("rows", "distinct")} == {k: stamp[k] for k in ("rows", "distinct")}
    generate(str(tmp_path / "other"), shape, SIZES[shape], seed=6)
    assert _digest(tmp_path / "other") != _digest(out)
    # Same arguments: the stamp says the files are complete, nothing is rewritten.
    mtimes = {name: os.stat(tmp_path / "again" / name).st_mtime_ns for name in os.listdir(tmp_path / "again")}
    assert generate(str(tmp_path / "again"), shape, SIZES[shape], seed=5) == again
    assert mtimes == {name: os.stat(tmp_path / "again" / name).st_mtime_ns for name in mtimes}
    # A damaged file or other arguments: generated anew.
    victim = tmp_path / "again" / next(iter(again["files"]))
    victim.write_bytes(b"")
    assert generate(str(tmp_path / "again"), shape, SIZES[shape], seed=5)["files"] == again["files"]
    assert _digest(tmp_path / "again") == _digest(out)
    (tmp_path / "again" / STAMP).unlink()
    with pytest.raises(SystemExit, match="not a scale corpus"):  # never deletes files it did not write
        generate(str(tmp_path / "again"), shape, SIZES[shape], seed=5)
