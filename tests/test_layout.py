"""The dataset's layout and manifest, each defined once in schemas/: what depends on that."""

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import SAMPLE, import_ok, run_cli
from ngramflow.schemas import order_of
from ngramflow.schemas.manifest import SCHEMA_VERSION
from ngramflow.transforms import native


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The bundled sample with an order-2 MKN model from the same job."""
    return import_ok(os.path.join(SAMPLE, "2012"), tmp_path_factory.mktemp("layout") / "out", "--mkn-order", "2")


def mkn_files(dataset) -> dict:
    """{file of mkn/: its rows, sorted (the order of rows within a part is the shuffle's)}."""
    return {os.path.relpath(os.path.join(root, name), dataset):
            sorted(map(str, pq.read_table(os.path.join(root, name)).to_pylist()))
            for root, _, names in os.walk(os.path.join(dataset, "mkn")) for name in names}


def test_the_mkn_command_writes_the_files_an_import_writes(dataset, tmp_path):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", dataset, copy], check=True)
    assert run_cli("mkn", copy, "--order", "2", "--overwrite", "-q") == 0
    assert mkn_files(copy) == mkn_files(dataset)


@pytest.mark.parametrize("command", [["query", "{dataset}", "count", "the"], ["mkn", "{dataset}", "--order", "2",
                                                                              "--overwrite"]])
def test_every_reader_refuses_a_newer_schema_version(dataset, tmp_path, capsys, command):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", dataset, copy], check=True)
    manifest = json.loads((copy / "_manifest.json").read_text())
    (copy / "_manifest.json").write_text(json.dumps({**manifest, "schema_version": SCHEMA_VERSION + 1}))
    assert run_cli(*(a.format(dataset=copy) for a in command)) == 2
    assert "was written by a newer ngramflow" in capsys.readouterr().err


def test_the_order_of_an_ngram_and_of_a_column_agree():
    ngrams = ["a", "a b", "a b c d e", "_START_ x_NOUN", "", "é ü"]
    assert [order_of(n) for n in ngrams] == native.orders(pa.array(ngrams)).tolist() == [1, 2, 5, 2, 1, 2]
    assert native.orders(pa.array(ngrams).slice(1, 2)).tolist() == [2, 5]


def test_schemas_import_neither_beam_nor_the_jobs_nor_query():
    code = ("import sys, ngramflow.schemas.layout, ngramflow.schemas.manifest; "
            "print(sorted(m for m in sys.modules if m.startswith(('apache_beam', 'ngramflow.pipeline', "
            "'ngramflow.query', 'ngramflow.transforms'))))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
