"""Import straight from http:// URLs (a real loopback server), with per-year totals."""

import os

import duckdb

from conftest import SAMPLE, import_ok, ngrams_of, vocabulary_of
from httpserver import Drop, FaultyServer


def test_import_from_urls_equals_import_from_local_files(tmp_path):
    folder = os.path.join(SAMPLE, "2012")
    names = sorted(os.listdir(folder))
    largest = max(names, key=lambda n: os.path.getsize(os.path.join(folder, n)))
    with FaultyServer() as server:
        urls = [server.add(f"/books/{n}", open(os.path.join(folder, n), "rb").read()) for n in names]
        server.script(f"/books/{largest}", Drop(after=5000))  # a broken stream on the way
        remote = import_ok(urls, tmp_path / "remote", "--cache", tmp_path / "cache")
        requests = server.requests_for(f"/books/{largest}")
        assert len(requests) == 2 and requests[1].range == "bytes=5000-"
        # Verified files in the cache are not fetched again.
        import_ok(urls, tmp_path / "again", "--cache", tmp_path / "cache")
        assert len(server.requests_for(f"/books/{largest}")) == 2
    local = import_ok(folder, tmp_path / "local")
    assert ngrams_of(remote) == ngrams_of(local)
    assert vocabulary_of(remote) == vocabulary_of(local)


def test_totalcounts_are_written_for_queries(tmp_path):
    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "out")
    totals_file = next(n for n in os.listdir(os.path.join(SAMPLE, "2012")) if "totalcounts" in n)
    tuples = open(os.path.join(SAMPLE, "2012", totals_file)).read().split()
    expected = sorted(tuple(int(x) for x in t.split(",")) for t in tuples)
    got = duckdb.sql(f"SELECT year, match_count, page_count, volume_count FROM '{dataset}/totalcounts.parquet' "
                     "ORDER BY year").fetchall()
    assert got == expected
