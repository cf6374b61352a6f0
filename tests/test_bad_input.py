"""Malformed rows, corrupt gzip files and user mistakes."""

import gzip
import json
import os
import shutil

import duckdb
import pytest

from conftest import SAMPLE, gz_files, import_ok, ngrams_of, run_cli


@pytest.fixture(scope="module")
def bad_and_clean(tmp_path_factory):
    """The same generated corpus with and without injected malformed lines."""
    from ngramflow.corpus.synthetic import generate

    root = tmp_path_factory.mktemp("malformed")
    params = dict(rows=6000, seed=5, orders=(1, 2), formats=("2012", "2020"), files_per_order=2)
    report = generate(root / "bad", malformed=30, **params)
    generate(root / "clean", malformed=0, **params)
    return root, report


#: Both ways of totalling n-grams (transforms/spill.py, transforms/sorted_input.py) read files alike.
MERGES = ["runs", "input-order"]


@pytest.mark.parametrize("merge", MERGES)
@pytest.mark.parametrize("fmt", ["2012", "2020"])
def test_every_malformed_row_is_rejected_and_good_totals_stay_exact(bad_and_clean, tmp_path, fmt, merge):
    root, report = bad_and_clean
    bad = import_ok(root / "bad" / fmt, tmp_path / "bad", "--max-reject-rate", "0.05", "--merge", merge)
    clean = import_ok(root / "clean" / fmt, tmp_path / "clean")
    assert ngrams_of(bad) == ngrams_of(clean)

    injected = {(os.path.join(root / "bad", m["file"]), m["line"]) for m in report.malformed
                if m["file"].startswith(fmt)}
    assert len(injected) == 30
    rejects = duckdb.sql(f"SELECT file, line, reason, raw FROM '{bad}/rejects/*.parquet'").fetchall()
    assert {(f, line) for f, line, _, _ in rejects} == injected
    assert all(reason for _, _, reason, _ in rejects)
    # The raw bytes are the very line at that number in the decompressed file.
    for file, line, _, raw in rejects:
        with gzip.open(file, "rb") as fh:
            assert fh.read().split(b"\n")[line - 1] == raw
    manifest = json.load(open(os.path.join(bad, "_manifest.json")))
    assert manifest["rows_rejected"] == 30
    assert "input_order_refused" not in manifest["aggregation"]


def test_reject_rate_above_the_limit_fails_the_run(bad_and_clean, tmp_path, capsys):
    root, _ = bad_and_clean
    out = tmp_path / "out"
    assert run_cli("import", root / "bad" / "2012", "--output", out, "--quiet", "--max-reject-rate", "0.0001") == 1
    err = capsys.readouterr().err
    assert "were malformed, more than --max-reject-rate" in err and "Traceback" not in err
    assert not (out / "_manifest.json").exists() and (out / "_INCOMPLETE").exists()


@pytest.fixture
def with_truncated(tmp_path):
    """The sample's 2012 files plus one truncated gzip."""
    folder = tmp_path / "in"
    shutil.copytree(os.path.join(SAMPLE, "2012"), folder)
    victim = gz_files(folder)[-1]
    data = open(victim, "rb").read()
    open(victim, "wb").write(data[: len(data) * 2 // 3])
    return folder, victim


@pytest.mark.parametrize("merge", MERGES)
@pytest.mark.parametrize("workers", ["1", "2"])  # two: Beam's worker threads, which printed the traceback too
def test_truncated_gzip_fails_the_run_naming_the_file(with_truncated, tmp_path, capsys, merge, workers):
    folder, victim = with_truncated
    out = tmp_path / "out"
    assert run_cli("import", folder, "--output", out, "--quiet", "--merge", merge, "--workers", workers) == 1
    err = capsys.readouterr().err.strip()
    assert victim in err and "corrupt or truncated gzip" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert not (out / "_manifest.json").exists() and (out / "_INCOMPLETE").exists()


@pytest.mark.parametrize("merge", MERGES)
def test_truncated_gzip_can_be_skipped_whole(with_truncated, tmp_path, merge):
    folder, victim = with_truncated
    skipped = import_ok(folder, tmp_path / "skipped", "--on-corrupt-file", "skip", "--merge", merge)
    manifest = json.load(open(os.path.join(skipped, "_manifest.json")))
    record = next(i for i in manifest["inputs"] if i["path"] == victim)
    assert record["status"] == "skipped" and "truncated" in record["reason"] and record["rows_read"] == 0
    assert manifest["files_skipped"] == 1
    others = [f for f in gz_files(folder) if f != victim]
    without = import_ok(others, tmp_path / "without")
    assert ngrams_of(skipped) == ngrams_of(without), "none of the corrupt file's rows may be counted"


@pytest.mark.parametrize("args, message", [
    (["import", "/no/such/file.gz", "--output", "{tmp}/o"], "input not found: /no/such/file.gz"),
    (["import", "{tmp}/empty", "--output", "{tmp}/o"], "no .gz files under directory"),
    (["import", SAMPLE, "--output", "{tmp}/afile"], "is a file, not a directory"),
    (["import", SAMPLE, "--output", "{tmp}/o", "--year-min", "1300"], "--year-min must be within 1400-2100"),
    (["import", SAMPLE, "--output", "{tmp}/o", "--year-min", "1990", "--year-max", "1950"], "is after --year-max"),
    (["import", SAMPLE, "--output", "{tmp}/o", "--min-count", "0"], "--min-count must be at least 1"),
    (["import", SAMPLE, "--output", "{tmp}/foreign"], "is not empty and is not an ngramflow dataset"),
])
def test_user_mistakes_are_one_line_errors_with_exit_code_2(tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("x")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "thesis.tex").write_text("x")
    assert run_cli(*[a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_complete_output_is_not_overwritten_silently(tmp_path, capsys):
    out = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "out", "--year-max", "1900")
    before = ngrams_of(out)
    assert run_cli("import", os.path.join(SAMPLE, "2012"), "--output", out, "--quiet") == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert ngrams_of(out) == before
    import_ok(os.path.join(SAMPLE, "2012"), out, "--overwrite")
    assert ngrams_of(out) != before


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        run_cli("import", "--help")
    text = capsys.readouterr().out
    for option in ("--year-min", "--min-count", "--pos", "--lowercase", "--keep-years", "--on-corrupt-file",
                   "--max-reject-rate", "--overwrite", "--format", "default"):
        assert option in text
