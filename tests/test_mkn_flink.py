"""The MKN stage on real Apache Flink (batch, a local job server with LOOPBACK workers): the same model
as the embedded runner's, and KenLM's, for a real text."""

import json

import duckdb
import pytest

from test_flink import flink_provisioned  # noqa: F401 (a fixture)
from test_mkn import LMPLZ_ZEN, text_dataset, zen_of_python
from mkn_reference import ArpaModel
from ngramflow.transforms.sizing import MKN_BUCKET_ROWS_VARIABLE


def model_rows(dataset) -> list:
    return duckdb.sql(f"SELECT * FROM read_parquet('{dataset}/mkn/*/*/*.parquet', union_by_name = true) "
                      "ORDER BY ALL").fetchall()


def test_flink_batch_estimates_the_embedded_runners_model(flink_provisioned, tmp_path, monkeypatch):  # noqa: F811
    # Several buckets, so each pass runs as several tasks spread over Flink's workers.
    monkeypatch.setenv(MKN_BUCKET_ROWS_VARIABLE, "60")
    embedded = text_dataset(tmp_path / "embedded", zen_of_python(), 3)
    flink = text_dataset(tmp_path / "flink", zen_of_python(), 3, "--runner", "flink", "--workers", "2")
    assert model_rows(flink) == model_rows(embedded)
    sections = [json.load(open(f"{d}/_manifest.json"))["mkn"] for d in (embedded, flink)]
    assert sections[0]["orders"] == sections[1]["orders"]
    ours, theirs = ArpaModel(tmp_path / "flink" / "model.arpa"), ArpaModel(LMPLZ_ZEN + ".arpa")
    assert sorted(ours.entries) == sorted(theirs.entries)
    for tokens, (prob, backoff) in theirs.entries.items():
        assert ours.entries[tokens][0] == pytest.approx(prob, abs=1e-4), tokens
        assert (ours.entries[tokens][1] or 0) == pytest.approx(backoff or 0, abs=1e-4), tokens
