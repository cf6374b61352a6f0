"""The Python API (ngramflow.open_dataset) over a real import of the bundled sample: the same answers, notes
and errors as `ngramflow query`, no Beam loaded, and the README's example run as written."""

import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings

import pyarrow as pa
import pytest

import ngramflow
from conftest import HERE, run_cli
from test_query import query, query_json
from ngramflow.errors import RunFailed, UserError
from ngramflow.query.api import QueryNote

README = os.path.join(HERE, "..", "README.md")


def readme_example() -> tuple[list[str], str]:
    """The README's "Python API" section: the import command of its sh block (as argv, without the program
    name) and the code of its python block."""
    with open(README, encoding="utf-8") as fh:
        section = re.search(r"^## Python API\n(.*?)(?=^## )", fh.read(), re.M | re.S)
    assert section, "README.md has no '## Python API' section"
    blocks = dict(re.findall(r"^```(sh|python)\n(.*?)^```", section.group(1), re.M | re.S))
    command = shlex.split(blocks["sh"])
    assert command[:2] == ["ngramflow", "import"], blocks["sh"]
    return command[1:], blocks["python"]


def in_folder_with_tests(folder) -> None:
    """Make ``folder`` a place where the README's relative paths (tests/data/...) resolve."""
    os.symlink(HERE, os.path.join(folder, "tests"))


@pytest.fixture(scope="module")
def readme_dir(tmp_path_factory):
    """A folder holding ``ds``, imported by the README's command as written (series, totals, an MKN model)."""
    folder = tmp_path_factory.mktemp("readme")
    in_folder_with_tests(folder)
    command, _ = readme_example()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        assert run_cli(*command, "--quiet") == 0
    finally:
        os.chdir(cwd)
    return folder


@pytest.fixture(scope="module")
def full(readme_dir):
    return str(readme_dir / "ds")


#: (the CLI's arguments, the same question to the API)
QUESTIONS = [
    (["count", "a", "burnt toast", "the", "_START_ The", "a b c d"],
     lambda ds: ds.count("a", "burnt toast", "the", "_START_ The", "a b c d")),
    (["count", "--ignore-case", "THE", "A"], lambda ds: ds.count("THE", "A", ignore_case=True)),
    (["series", "a", ", ,", "the"], lambda ds: ds.series("a", ", ,", "the")),
    (["series", "a", ", ,", "--normalize", "--smooth", "3"], lambda ds: ds.series("a", ", ,", normalize=True, smooth=3)),
    (["next", "a", "--top", "5"], lambda ds: ds.next("a", top=5)),
    (["next", "a"], lambda ds: ds.next("a")),
    (["next", "zzyzx"], lambda ds: ds.next("zzyzx")),
    (["score", "a lom kaa", "blorf quux", ""], lambda ds: ds.score("a lom kaa", "blorf quux", "")),
    (["score", "--verbose", "a lom kaa", "blorf"], lambda ds: ds.score("a lom kaa", "blorf", per_word=True)),
    (["sql", 'SELECT "order", count(*) AS ngrams, sum(match_count) AS total FROM ngrams GROUP BY ALL ORDER BY 1'],
     lambda ds: ds.sql('SELECT "order", count(*) AS ngrams, sum(match_count) AS total FROM ngrams '
                       'GROUP BY ALL ORDER BY 1')),
    (["sql", "SELECT * FROM mkn_discounts ORDER BY \"order\""],
     lambda ds: ds.sql("SELECT * FROM mkn_discounts ORDER BY \"order\"")),
]


@pytest.mark.parametrize("args, ask", QUESTIONS, ids=[" ".join(q[0][:2]) for q in QUESTIONS])
def test_the_api_answers_what_the_command_prints(full, capsys, args, ask):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryNote)
        table = ask(ngramflow.open_dataset(full))
    assert isinstance(table, pa.Table)
    printed = query_json(capsys, full, *args)
    assert printed == table.to_pylist()


def test_answers_become_dataframes(full):
    ds = ngramflow.open_dataset(full)
    frame = ds.series("a", normalize=True).to_pandas()
    assert list(frame.columns) == ["year", "a"] and frame["a"].between(0, 1).all()
    assert ds.count("a").to_pandas().loc[0, "match_count"] > 0


def test_sql_batches_stream_what_sql_returns(full):
    ds = ngramflow.open_dataset(full)
    query = "SELECT ngram, match_count FROM ngrams ORDER BY ngram"
    reader = ds.sql_batches(query)
    first = reader.read_next_batch()  # left half read: the dataset's other queries still run
    assert ds.count("a").num_rows == 1
    assert pa.Table.from_batches([first] + list(reader)).equals(ds.sql(query))


@pytest.mark.parametrize("args, ask, note", [
    (["count", "a b c d"], lambda ds: ds.count("a b c d"), "has no 4-grams (its orders: 1, 2, 3), so every 4-gram "
                                                            "counts 0"),
    (["next", "zzyzx"], lambda ds: ds.next("zzyzx"), "no 2-gram of"),
    (["next", "a b c"], lambda ds: ds.next("a b c"), "has no 4-grams (its orders: 1, 2, 3), so no continuations"),
    (["series", "zzyzx"], lambda ds: ds.series("zzyzx"), "none of these n-grams occurs in"),
])
def test_notes_are_warnings(full, capsys, args, ask, note):
    with pytest.warns(QueryNote) as caught:
        ask(ngramflow.open_dataset(full))
    [warning] = caught
    assert note in str(warning.message)
    _, _, err = query(capsys, full, *args)
    assert err == f"note: {warning.message}\n"


@pytest.mark.parametrize("args, ask", [
    (["count", "a b c d e f"], lambda ds: ds.count("a b c d e f")),
    (["count", "  "], lambda ds: ds.count("  ")),
    (["next", "a b c d e"], lambda ds: ds.next("a b c d e")),
    (["sql", "SELEC 1"], lambda ds: ds.sql("SELEC 1")),
    (["sql", "COPY (SELECT 1 AS x) TO 'leak.csv'"], lambda ds: ds.sql("COPY (SELECT 1 AS x) TO 'leak.csv'")),
    (["sql", "SELECT * FROM read_text('/etc/hostname')"], lambda ds: ds.sql("SELECT * FROM read_text('/etc/hostname')")),
    (["sql", "SET enable_external_access = true"], lambda ds: ds.sql("SET enable_external_access = true")),
])
def test_mistakes_raise_the_commands_one_line_error(full, capsys, args, ask):
    code, _, err = query(capsys, full, *args)
    assert code == 2
    with pytest.raises(UserError) as raised:
        ask(ngramflow.open_dataset(full))
    assert err == f"ngramflow: error: {raised.value}\n"


def test_a_failing_value_while_sql_runs_is_the_querys_mistake(full):
    ds = ngramflow.open_dataset(full)
    query = "SELECT (range::VARCHAR || CASE WHEN range > 30000 THEN 'x' ELSE '' END)::BIGINT FROM range(50000)"
    with pytest.raises(UserError, match="^SQL: Conversion Error: Could not convert string '30001x' to INT64$"):
        ds.sql(query)
    assert ds.sql("SELECT 1 AS one").to_pylist() == [{"one": 1}]  # the dataset still answers


def test_out_of_range_arguments_are_the_options_mistakes(full):
    ds = ngramflow.open_dataset(full)
    with pytest.raises(UserError, match=r"^top: how many continuations to show, a whole number from 1 to "
                                        r"1,000,000,000; got 0$"):
        ds.next("a", top=0)
    with pytest.raises(UserError, match="^smooth: the years on each side, a whole number from 0 to 700; got 2.5$"):
        ds.series("a", smooth=2.5)
    with pytest.raises(TypeError, match=r"count\('a', 'burnt toast'\)"):
        ds.count(["a", "burnt toast"])


def test_opening_what_is_not_a_dataset(tmp_path, full):
    with pytest.raises(UserError, match="does not exist$"):
        ngramflow.open_dataset(tmp_path / "missing")
    with pytest.raises(UserError, match=r"is not an ngramflow output directory \(it has no _manifest.json\)$"):
        ngramflow.open_dataset(tmp_path)
    damaged = tmp_path / "damaged"
    shutil.copytree(full, damaged)
    for part in (damaged / "ngrams" / "order=1").iterdir():
        part.write_bytes(b"not parquet")
    with pytest.raises(RunFailed, match=f"^could not read {damaged}: "):
        ngramflow.open_dataset(damaged).count("a")


#: Run in a fresh interpreter: what `import ngramflow`, the API and the query command load.
NO_BEAM = """
import sys
import ngramflow
assert "apache_beam" not in sys.modules and "duckdb" not in sys.modules, "import ngramflow is not light"
ds = ngramflow.open_dataset(sys.argv[1])
ds.count("a"); ds.series("a", normalize=True); ds.next("a"); ds.score("a b"); ds.sql("SELECT * FROM ngrams LIMIT 1")
assert "apache_beam" not in sys.modules, "the API loaded Beam"
from ngramflow.cli import main
for question in (["count", "a"], ["series", "a"], ["next", "a"], ["score", "a b"], ["sql", "SELECT 1"]):
    assert main(["query", sys.argv[1], *question]) == 0
assert "apache_beam" not in sys.modules, "the query command loaded Beam"
"""


def test_neither_the_api_nor_the_query_command_loads_beam(full):
    result = subprocess.run([sys.executable, "-c", NO_BEAM, full], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_readme_example_runs_as_written(readme_dir):
    _, code = readme_example()
    result = subprocess.run([sys.executable, "-c", code], cwd=readme_dir, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
