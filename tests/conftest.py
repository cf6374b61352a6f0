"""Shared fixtures: generated corpora, imports through the real CLI, DuckDB references."""

import os
import shutil
import signal
import subprocess
import tempfile

import duckdb
import pytest

from ngramflow.cli import main as ngramflow
from ngramflow.transforms.policy import POS_TAGS

HERE = os.path.dirname(os.path.abspath(__file__))
#: The offline checks of the AWS deployment (Terraform and checkov), which tests/test_terraform.py runs.
TERRAFORM_CHECKS = os.path.join(os.path.dirname(HERE), "infra", "terraform", "test.sh")
SAMPLE = os.path.join(HERE, "data", "sample")
NGRAM_COLUMNS = "ngram, \"order\", match_count, volume_count, first_year, last_year, years"


_TERRAFORM = {}


def pytest_collection_finish(session):
    """Start TERRAFORM_CHECKS as the session starts, when tests/test_terraform.py is among its tests: about 100 s
    of Terraform and checkov, beside the Python tests, which mostly run on one core and leave the other idle
    (as a test of its own, it held the session for all of them). The test waits for its result."""
    if session.config.option.collectonly or not shutil.which("terraform"):
        return
    if any(item.path.name == "test_terraform.py" for item in session.items):
        output = tempfile.TemporaryFile(mode="w+")
        _TERRAFORM["output"] = output
        _TERRAFORM["process"] = subprocess.Popen([TERRAFORM_CHECKS], stdout=output, stderr=subprocess.STDOUT,
                                                 text=True, start_new_session=True)


def pytest_sessionfinish(session):
    """No checks left running after the session (one that ended early, or skipped their test)."""
    process = _TERRAFORM.get("process")
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()


@pytest.fixture
def terraform_checks() -> tuple[int, str]:
    """The exit status and output of TERRAFORM_CHECKS, started with the session (pytest_collection_finish)."""
    process, output = _TERRAFORM["process"], _TERRAFORM["output"]
    process.wait(timeout=600)
    output.seek(0)
    return process.returncode, output.read()


def sigint_as_ctrl_c() -> None:
    """Popen's preexec_fn for a command a test interrupts with SIGINT, as Ctrl+C would: a shell runs
    background jobs (a CI script's, for one) with SIGINT ignored, the child inherits that, and Python
    then never turns SIGINT into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args) -> int:
    """Run `ngramflow ARGS` in this process, exactly as the console script does."""
    return ngramflow([str(a) for a in args])


def import_ok(inputs, output, *options):
    inputs = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    code = run_cli("import", *inputs, "--output", output, "--quiet", *options)
    assert code == 0, f"import failed with exit code {code}"
    assert os.path.exists(os.path.join(output, "_manifest.json"))
    return str(output)


def copied(pieces) -> list[tuple[int, int, bytes]]:
    """The pieces of LineReader.lines_before, each copied out of the reader's buffer before the next is read."""
    return [(first, count, bytes(data)) for first, count, data in pieces]


def ngrams_of(dataset, columns=NGRAM_COLUMNS) -> list[tuple]:
    return duckdb.sql(f"SELECT {columns} FROM read_parquet('{dataset}/ngrams/*/*.parquet') ORDER BY ngram").fetchall()


def vocabulary_of(dataset) -> list[tuple]:
    return duckdb.sql(f"SELECT id, token, match_count, volume_count FROM '{dataset}/vocabulary/*.parquet' ORDER BY id").fetchall()


def gz_files(folder) -> list[str]:
    return sorted(os.path.join(r, n) for r, _, names in os.walk(folder) for n in names if n.endswith(".gz"))


_TAGS = "|".join("\\." if t == "." else t for t in POS_TAGS)
#: A SQL condition true for n-grams without a POS-tagged token (what the default --pos drop keeps).
NOT_TAGGED = f"NOT regexp_matches(ngram, '(^| )([^ ]+_({_TAGS})|_({_TAGS})_)( |$)')"


def read_2012(files) -> str:
    """A DuckDB table function reading 2012-format files as rows (ngram, year, match, volume)."""
    listing = ", ".join(f"'{f}'" for f in files)
    return f"""read_csv([{listing}], delim='\t', quote='', escape='', header=false, compression='gzip',
                        columns={{'ngram': 'VARCHAR', 'year': 'INTEGER', 'match': 'BIGINT', 'volume': 'BIGINT'}})"""


def reference_2012(files, where="TRUE", year_where="TRUE", key="ngram") -> duckdb.DuckDBPyRelation:
    """DuckDB's own aggregation of 2012-format files: the independent reference."""
    con = duckdb.connect()
    return con.sql(f"""
        WITH rows AS (
            SELECT {key} AS ngram, year, match, volume
            FROM {read_2012(files)}
            WHERE {where} AND {year_where}
        )
        SELECT ngram, len(string_split(ngram, ' ')) AS "order", sum(match) AS match_count,
               sum(volume) AS volume_count, min(year) AS first_year, max(year) AS last_year,
               count(DISTINCT year) AS years
        FROM rows GROUP BY ngram
    """)


def reference_2020(files) -> duckdb.DuckDBPyRelation:
    """DuckDB's aggregation of 2020-format files, tuples unnested in SQL."""
    con = duckdb.connect()
    listing = ", ".join(f"'{f}'" for f in files)
    return con.sql(f"""
        WITH lines AS (
            SELECT string_split(line, '\t') AS f
            FROM read_csv([{listing}], delim='\x1f', quote='', escape='', header=false, compression='gzip',
                          columns={{'line': 'VARCHAR'}})
        ), tuples AS (
            SELECT f[1] AS ngram, string_split(unnest(f[2:]), ',') AS t FROM lines
        ), rows AS (
            SELECT ngram, t[1]::INTEGER AS year, t[2]::BIGINT AS match, t[3]::BIGINT AS volume FROM tuples
        )
        SELECT ngram, len(string_split(ngram, ' ')) AS "order", sum(match) AS match_count,
               sum(volume) AS volume_count, min(year) AS first_year, max(year) AS last_year,
               count(DISTINCT year) AS years
        FROM rows GROUP BY ngram
    """)


def assert_same_rows(ours: list[tuple], reference: duckdb.DuckDBPyRelation):
    expected = sorted(reference.fetchall())
    assert len(ours) == len(expected)
    mismatches = [(a, b) for a, b in zip(sorted(ours), expected) if a != b]
    assert not mismatches, f"{len(mismatches)} rows differ, first: {mismatches[:3]}"


@pytest.fixture(scope="session")
def big_corpus(tmp_path_factory):
    """A generated corpus of about 1.2M 2012-format rows, in both formats."""
    from ngramflow.corpus.synthetic import generate

    out = tmp_path_factory.mktemp("big-corpus")
    generate(out, rows=1_200_000, seed=11, orders=(1, 2, 3), files_per_order=3)
    return out
