"""A file named .gz must be gzip: an empty file or other data is a bad file, never an empty or plain-text one."""

import bz2
import gzip
import json
import os

import pytest

from conftest import import_ok, ngrams_of, run_cli
from ngramflow.transforms import read
from ngramflow.transforms.lines import InputFileError, ReadSettings

ROWS = b"cat\t1990\t5\t2\ncat\t1991\t1\t1\ndog\t1990\t7\t3\n"
NOT_GZIP = {
    "empty.gz": (b"", "empty file"),
    "error-page.gz": (b"<!DOCTYPE html><html>403 Forbidden</html>\n", "not gzip (starts with b'<!DOCTYP'"),
    "bzip2.gz": (bz2.compress(ROWS), "not gzip (starts with b'BZh9"),
    "plain.gz": (ROWS, "not gzip (starts with b'cat\\t1990'"),
}


@pytest.fixture
def good(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.gz").write_bytes(gzip.compress(ROWS))
    return folder


def _add(folder, name):
    (folder / name).write_bytes(NOT_GZIP[name][0])
    return str(folder / name)


@pytest.mark.parametrize("name", sorted(NOT_GZIP))
def test_a_gz_file_that_is_not_gzip_fails_the_run_naming_it(good, tmp_path, capsys, name):
    bad = _add(good, name)
    out = tmp_path / "out"
    assert run_cli("import", good, "--output", out, "--quiet") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{bad}: {NOT_GZIP[name][1]}" in err
    assert NOT_GZIP[name][1] in (out / "_INCOMPLETE").read_text() and not (out / "_manifest.json").exists()


def test_skip_records_each_such_file_as_skipped_and_counts_none_of_its_rows(good, tmp_path):
    without = import_ok(good, tmp_path / "without")
    bad = {_add(good, name): reason for name, (_, reason) in NOT_GZIP.items()}
    out = import_ok(good, tmp_path / "out", "--on-corrupt-file", "skip")
    manifest = json.load(open(os.path.join(out, "_manifest.json")))
    skipped = {i["path"]: i for i in manifest["inputs"] if i["status"] == "skipped"}
    assert sorted(skipped) == sorted(bad) and manifest["files_skipped"] == len(bad)
    for path, reason in bad.items():
        assert skipped[path]["reason"].startswith(reason) and skipped[path]["rows_read"] == 0
    assert ngrams_of(out) == ngrams_of(without)


def test_files_not_named_gz_may_be_plain_text_or_gzip(tmp_path):
    (tmp_path / "rows.tsv").write_bytes(ROWS)
    (tmp_path / "rows-gzipped").write_bytes(gzip.compress(ROWS.replace(b"cat", b"cow")))
    out = import_ok([tmp_path / "rows.tsv", tmp_path / "rows-gzipped"], tmp_path / "out")
    assert [(n, m) for n, _, m, *_ in ngrams_of(out)] == [("cat", 6), ("cow", 6), ("dog", 14)]


@pytest.mark.parametrize("index", [0, 2])
def test_a_slice_of_a_file_that_is_not_gzip_fails_too(good, index):
    """Checkpointed imports read slices, each with a reader of its own when it starts fresh."""
    bad = _add(good, "error-page.gz")
    fn = read.ReadNgramFile(ReadSettings(slice_bytes=16))
    fn.setup()
    with pytest.raises(InputFileError, match=r"error-page\.gz: not gzip \(starts with b'<!DOCTYP'\)"):
        list(fn.process([(bad, os.path.getsize(bad), index, 4)]))
