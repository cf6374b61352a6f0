"""`ngramflow query` over real imports of the bundled sample, against DuckDB over the raw gzip files,
the totals file parsed here, and KenLM scoring the ARPA file the dataset exports."""

import csv
import functools
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

import duckdb
import numpy as np
import pytest
from PIL import Image

from conftest import (NOT_TAGGED, SAMPLE, gz_files, import_ok, read_2012, reference_2012, run_cli,
                      sigint_as_ctrl_c)

FILES_2012 = gz_files(os.path.join(SAMPLE, "2012"))
TOTALS_2012 = os.path.join(SAMPLE, "2012", "googlebooks-eng-all-totalcounts-20120701.txt")
#: Untagged n-grams without sentence boundaries: words a user would type.
PLAIN = f"{NOT_TAGGED} AND NOT contains(ngram, '_START_') AND NOT contains(ngram, '_END_')"


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """Everything a dataset can have: per-year series, Google's totals and an order-3 MKN model."""
    return import_ok(os.path.join(SAMPLE, "2012"), tmp_path_factory.mktemp("query") / "full",
                     "--keep-years", "--mkn-order", "3")


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """The 2012 n-gram files alone, case-folded: no series, no totals, no model."""
    return import_ok(FILES_2012, tmp_path_factory.mktemp("query") / "bare", "--lowercase")


@pytest.fixture(scope="module")
def failed_model(tmp_path_factory):
    """Series but no totals, and an MKN stage that failed (pruned counts, no fallback allowed)."""
    dataset = import_ok(gz_files(os.path.join(SAMPLE, "2020")), tmp_path_factory.mktemp("query") / "2020",
                        "--keep-years")
    assert run_cli("mkn", dataset, "--order", "3", "--discount-fallback", "none", "-q") == 1
    return dataset


def query(capsys, dataset, *args) -> tuple[int, str, str]:
    capsys.readouterr()  # what fixtures printed while setting up
    try:
        code = run_cli("query", dataset, *args)
    except SystemExit as exit:  # a mistake argparse found
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def query_json(capsys, dataset, *args) -> list[dict]:
    code, out, err = query(capsys, dataset, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def one_line_error(capsys, code, dataset, *args) -> str:
    actual, out, err = query(capsys, dataset, *args)
    assert actual == code, err
    err = err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def text(value: str) -> str:
    """A SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def raw(sql: str) -> list[tuple]:
    """A query over the raw 2012 files, read by DuckDB as the table ``raw``."""
    return duckdb.sql(f"WITH raw AS (SELECT * FROM {read_2012(FILES_2012)}) {sql}").fetchall()


def picked_ngrams() -> list[str]:
    """The two most frequent and two arbitrary untagged n-grams of each order, some with boundaries or Unicode."""
    picks = raw(f"""SELECT ngram FROM (
                        SELECT ngram, sum(match) AS m, len(string_split(ngram, ' ')) AS n FROM raw
                        WHERE {NOT_TAGGED} GROUP BY ngram)
                    QUALIFY row_number() OVER (PARTITION BY n ORDER BY m DESC) <= 2
                         OR row_number() OVER (PARTITION BY n ORDER BY md5(ngram)) <= 2""")
    special = raw(f"""SELECT min(ngram) FILTER (WHERE contains(ngram, '_START_')),
                             min(ngram) FILTER (WHERE regexp_matches(ngram, '[^\\x00-\\x7F]'))
                      FROM raw WHERE {NOT_TAGGED}""")[0]
    return sorted({p[0] for p in picks} | set(special))


def test_count_matches_the_raw_files(full, capsys):
    ngrams = picked_ngrams()
    assert len(ngrams) >= 10 and any("_START_" in n for n in ngrams)
    expected = {r[0]: r for r in reference_2012(FILES_2012).filter(
        f"ngram IN ({', '.join(map(text, ngrams))})").fetchall()}
    rows = query_json(capsys, full, "count", *ngrams)
    assert [r["ngram"] for r in rows] == ngrams
    for row in rows:
        ngram, _order, match, volume, first, last, years = expected[row["ngram"]]
        assert (row["match_count"], row["volume_count"], row["first_year"], row["last_year"], row["years"]) == \
            (match, volume, first, last, years), ngram


def test_unknown_ngram_counts_zero(full, capsys):
    code, out, err = query(capsys, full, "count", "zzyzx  qwv")
    assert code == 0 and err == ""
    header, rule, row = out.splitlines()
    assert header.split() == ["ngram", "match_count", "volume_count", "first_year", "last_year", "years"]
    assert set(rule) == {"-", " "} and row.split() == ["zzyzx", "qwv", "0", "0", "0"]


def test_count_of_an_order_the_dataset_lacks_is_zero_with_a_note(full, capsys):
    code, out, err = query(capsys, full, "count", "a b c d", "--format", "csv")
    assert code == 0
    assert list(csv.reader(io.StringIO(out)))[1] == ["a b c d", "0", "0", "", "", "0"]
    assert "has no 4-grams (its orders: 1, 2, 3), so every 4-gram counts 0" in err


def case_groups(n: int) -> list[str]:
    """Lower-cased n-grams with several case variants among the untagged raw n-grams."""
    return [r[0] for r in raw(f"""SELECT lower(ngram) FROM raw WHERE {PLAIN} GROUP BY 1
                                  HAVING count(DISTINCT ngram) > 1 ORDER BY sum(match) DESC LIMIT {n}""")]


def test_count_ignore_case_sums_the_variants(full, capsys):
    groups = case_groups(3)
    assert len(groups) == 3
    expected = {r[0]: r for r in reference_2012(FILES_2012, where=PLAIN, key="lower(ngram)").fetchall()}
    variants = dict(raw(f"SELECT lower(ngram), count(DISTINCT ngram) FROM raw WHERE {PLAIN} GROUP BY 1"))
    for row in query_json(capsys, full, "count", "--ignore-case", *[g.upper() for g in groups]):
        ngram, _order, match, volume, first, last, years = expected[row["ngram"].lower()]
        assert (row["match_count"], row["volume_count"], row["first_year"], row["last_year"], row["years"],
                row["variants"]) == (match, volume, first, last, years, variants[ngram])


def test_a_lowercase_dataset_folds_the_query_and_has_no_series_years(bare, capsys):
    group = case_groups(1)[0]
    _, _order, match, volume, first, last, _years = reference_2012(
        FILES_2012, where=PLAIN, key="lower(ngram)").filter(f"ngram = {text(group)}").fetchall()[0]
    typed = group.upper()
    assert query_json(capsys, bare, "count", typed)[0]["match_count"] == match
    ignoring = query_json(capsys, bare, "count", "--ignore-case", typed)[0]
    assert (ignoring["match_count"], ignoring["volume_count"], ignoring["first_year"], ignoring["last_year"],
            ignoring["years"], ignoring["variants"]) == (match, volume, first, last, None, 1)


def parsed_totals() -> dict[int, int]:
    """year -> match count, read from Google's one-line totals file here."""
    with open(TOTALS_2012) as fh:
        return {int(t.split(",")[0]): int(t.split(",")[1]) for t in fh.read().split()}


def expected_series(ngrams, normalize: bool, smooth: int) -> tuple[list[int], dict[str, list]]:
    """Zero-filled per-year counts from the raw rows, divided by the totals and smoothed with numpy."""
    yearly = {n: dict(raw(f"SELECT year, sum(match) FROM raw WHERE ngram = {text(n)} GROUP BY 1")) for n in ngrams}
    years = np.arange(min(min(y) for y in yearly.values()), max(max(y) for y in yearly.values()) + 1)
    totals = parsed_totals()
    out = {}
    for ngram, counts in yearly.items():
        values = np.array([counts.get(y, 0) for y in years], float)
        known = np.ones(len(years))
        if normalize:
            known = np.array([1.0 if totals.get(y) else 0.0 for y in years])
            values = np.array([counts.get(y, 0) / totals[y] if totals.get(y) else 0.0 for y in years])
        window = np.ones(2 * smooth + 1)
        sums, weights = np.convolve(values * known, window, "same"), np.convolve(known, window, "same")
        out[ngram] = [s / w if w else None for s, w in zip(sums, weights)]
    return years.tolist(), out


def series_ngrams() -> list[str]:
    return [r[0] for r in raw(f"""SELECT ngram FROM raw WHERE {PLAIN} GROUP BY ngram
                                  ORDER BY count(DISTINCT year) DESC, ngram LIMIT 3""")]


@pytest.mark.parametrize("options, normalize, smooth", [([], False, 0), (["--normalize", "--smooth", "3"], True, 3)])
def test_series_matches_the_raw_rows(full, capsys, options, normalize, smooth):
    ngrams = series_ngrams()
    years, expected = expected_series(ngrams, normalize, smooth)
    rows = query_json(capsys, full, "series", *ngrams, *options)
    assert [r["year"] for r in rows] == years
    for ngram in ngrams:
        got = [r[ngram] for r in rows]
        if not normalize and not smooth:
            assert got == [int(v) for v in expected[ngram]]
        else:
            assert got == pytest.approx(expected[ngram], rel=1e-9, abs=1e-15)


def test_series_plot_draws_one_line_per_ngram(full, capsys, tmp_path):
    from ngramflow.query.series_plot import COLOURS

    chart = tmp_path / "chart.png"
    code, out, err = query(capsys, full, "series", *series_ngrams(), "--normalize", "--smooth", "2",
                           "--plot", chart)
    assert code == 0 and f"chart written to {chart}" in err
    image = Image.open(chart)
    assert image.format == "PNG" and image.size == (1000, 500)
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(int)
    assert (pixels != 255).any(axis=1).mean() > 0.01, "the chart is blank"
    for colour in COLOURS[:3]:
        rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(pixels - rgb).sum(axis=1) < 40).sum() > 200, f"no line drawn in {colour}"
    assert not (np.abs(pixels - np.array([int(COLOURS[3][i:i + 2], 16) for i in (1, 3, 5)])).sum(axis=1) < 40).any()


def test_next_ranks_the_continuations_with_their_shares(full, capsys):
    prefix = raw(f"""SELECT split_part(ngram, ' ', 1) || ' ' || split_part(ngram, ' ', 2) AS p FROM raw
                     WHERE {NOT_TAGGED} AND len(string_split(ngram, ' ')) = 3
                     GROUP BY p ORDER BY count(DISTINCT ngram) DESC, p LIMIT 1""")[0][0]
    continuations = reference_2012(FILES_2012, where=f"{NOT_TAGGED} AND starts_with(ngram, {text(prefix + ' ')})") \
        .filter("\"order\" = 3").fetchall()
    assert len(continuations) >= 4
    total = sum(r[2] for r in continuations)
    expected = sorted(((r[0].split(" ")[2], r[2], r[2] / total) for r in continuations), key=lambda r: (-r[1], r[0]))
    rows = query_json(capsys, full, "next", *prefix.split(" "), "--top", "3")
    assert [(r["next"], r["match_count"]) for r in rows] == [e[:2] for e in expected[:3]]
    assert [r["share"] for r in rows] == pytest.approx([e[2] for e in expected[:3]], rel=1e-12)


def test_next_of_an_unknown_prefix_is_empty(full, capsys):
    code, out, err = query(capsys, full, "next", "zzyzx", "--format", "json")
    assert code == 0 and json.loads(out) == [] and "no 2-gram of" in err and "starts with 'zzyzx'" in err
    code, out, err = query(capsys, full, "next", "a", "b", "c", "--format", "csv")
    assert code == 0 and out.strip() == "next,match_count,share" and "has no 4-grams" in err


def scoring_sentences() -> list[str]:
    words = [r[0] for r in raw(f"""SELECT ngram FROM raw WHERE {PLAIN} AND len(string_split(ngram, ' ')) = 3
                                   GROUP BY ngram ORDER BY sum(match) DESC LIMIT 6""")]
    return words + [" ".join(words[:3]), words[0] + " blorf " + words[1], "blorf quux", "",
                    words[4].upper(), "   spaced   out  "]


def test_score_agrees_with_kenlm_on_the_exported_arpa(full, capsys, tmp_path):
    kenlm = pytest.importorskip("kenlm")
    arpa = tmp_path / "model.arpa"
    assert run_cli("export-arpa", full, arpa) == 0
    model = kenlm.Model(str(arpa))
    sentences = scoring_sentences()
    summary = query_json(capsys, full, "score", *sentences)
    assert [r["sentence"] for r in summary] == sentences
    for row, sentence in zip(summary, sentences):
        assert row["log10_prob"] == pytest.approx(model.score(sentence, bos=True, eos=True), abs=1e-4)
        assert row["perplexity"] == pytest.approx(model.perplexity(sentence), rel=1e-4)
        assert row["words"] == len(sentence.split())
        assert row["oov"] == sum(w not in model for w in sentence.split())
    words = query_json(capsys, full, "score", "--verbose", *sentences)
    expected = [(i, *score) for i, s in enumerate(sentences, 1) for score in model.full_scores(s, bos=True, eos=True)]
    assert len(words) == len(expected)
    for word, (i, prob, length, oov) in zip(words, expected):
        assert word["#"] == i and word["log10_prob"] == pytest.approx(prob, abs=1e-4)
        assert len(word["ngram"].split(" ")) == length and (word["token"] == "<unk>") == oov
    assert {len(w["ngram"].split(" ")) for w in words} == {1, 2, 3}, "every back-off depth is exercised"


def test_score_verbose_table_ends_with_the_sentence_totals(full, capsys):
    code, out, _ = query(capsys, full, "score", "--verbose", "blorf quux")
    assert code == 0
    per_word, totals = out.strip().split("\n\n")
    assert [line.split()[1:3] for line in per_word.splitlines()[2:]] == [["blorf", "<unk>"], ["quux", "<unk>"],
                                                                         ["_END_", "_END_"]]
    assert totals.splitlines()[0].split() == ["#", "sentence", "words", "oov", "log10_prob", "perplexity"]


def test_sql_sees_every_output_as_a_view(full, bare, capsys):
    views = [r["table_name"] for r in query_json(capsys, full, "sql",
                                                 "SELECT table_name FROM information_schema.tables ORDER BY 1")]
    assert views == ["mkn_contexts", "mkn_discounts", "mkn_ngrams", "ngrams", "rejects", "totalcounts",
                     "vocabulary"]
    assert [r["table_name"] for r in query_json(capsys, bare, "sql", "SELECT table_name FROM "
                                                "information_schema.tables ORDER BY 1")] == \
        ["ngrams", "rejects", "vocabulary"]
    code, out, _ = query(capsys, full, "sql", 'SELECT "order", count(*) AS n FROM ngrams GROUP BY 1 ORDER BY 1',
                         "--format", "csv")
    per_order = Counter(row[1] for row in reference_2012(FILES_2012, where=NOT_TAGGED).fetchall())
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [["order", "n"]] + [[str(o), str(per_order[o])] for o in (1, 2, 3)]
    totals = query_json(capsys, full, "sql", "SELECT sum(match_count) AS total FROM totalcounts")
    assert totals == [{"total": sum(parsed_totals().values())}]
    assert query_json(capsys, full, "sql", "SELECT count(*) AS n FROM mkn_discounts") == [{"n": 3}]


def test_sql_table_shows_a_thousand_rows_and_says_so(full, capsys):
    code, out, err = query(capsys, full, "sql", "SELECT range AS i, 'x' AS s FROM range(1500)")
    assert code == 0 and len(out.splitlines()) == 2 + 1000
    assert out.splitlines()[2] == "  0  x" and "the first 1,000 rows" in err  # numbers right-aligned


def test_sql_over_the_rejects_of_an_import(capsys, tmp_path):
    bad = os.path.join(SAMPLE, "..", "sample-bad")
    dataset = import_ok(os.path.join(bad, "2012"), tmp_path / "bad")
    with open(os.path.join(bad, "corpus.json")) as fh:
        injected = sorted((os.path.basename(m["file"]), m["line"]) for m in json.load(fh)["malformed"])
    rows = query_json(capsys, dataset, "sql", "SELECT file, line, raw FROM rejects ORDER BY file, line")
    assert sorted((os.path.basename(r["file"]), r["line"]) for r in rows) == injected
    code, out, _ = query(capsys, dataset, "sql", "SELECT line, raw FROM rejects ORDER BY file, line")
    header, rule, *lines = out.splitlines()
    start = rule.index("  -") + 2  # where the raw column begins
    assert code == 0 and "\t" not in out, "tabs of the raw lines are shown escaped, keeping the columns aligned"
    assert [line[start:] for line in lines] == [r["raw"].replace("\t", "\\t").rstrip() for r in rows]


def test_point_lookups_read_only_their_order(full, capsys, tmp_path):
    dataset = tmp_path / "damaged"
    shutil.copytree(full, dataset)
    for order in (1, 3):
        for part in (dataset / "ngrams" / f"order={order}").iterdir():
            part.write_bytes(b"not parquet")
    bigram, match = raw(f"""SELECT ngram, sum(match) FROM raw WHERE {PLAIN} AND len(string_split(ngram, ' ')) = 2
                            GROUP BY ngram ORDER BY ngram LIMIT 1""")[0]
    assert query_json(capsys, dataset, "count", bigram)[0]["match_count"] == match
    err = one_line_error(capsys, 1, dataset, "count", "a")
    assert err.startswith(f"ngramflow: run failed: could not read {dataset}:")


def test_the_query_command_does_not_load_beam(full):
    program = ("import sys; from ngramflow.cli import main; code = main(['query', sys.argv[1], 'count', 'a']); "
               "sys.exit(code or 'apache_beam' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", program, full], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ctrl_c_stops_a_long_query_at_once(full):
    proc = subprocess.Popen([sys.executable, "-m", "ngramflow.cli", "query", full, "sql",
                             "SELECT sum(range % 7) FROM range(100000000000)"], stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_ctrl_c)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err


def test_not_a_dataset_and_an_incomplete_one(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    assert "is not an ngramflow output directory (it has no _manifest.json)" in \
        one_line_error(capsys, 2, tmp_path, "count", "a")
    assert "does not exist" in one_line_error(capsys, 2, tmp_path / "missing", "count", "a")
    assert "is a file, not an ngramflow output directory" in \
        one_line_error(capsys, 2, tmp_path / "notes.txt", "count", "a")
    failed = tmp_path / "failed"
    assert run_cli("import", os.path.join(SAMPLE, "..", "sample-bad"), "--output", failed, "-q",
                   "--max-reject-rate", "0") == 1
    capsys.readouterr()
    err = one_line_error(capsys, 2, failed, "sql", "SELECT 1")
    assert f"{failed} is an incomplete dataset (ngramflow run failed" in err and "run the import again" in err


@pytest.mark.parametrize("fixture, args, message", [
    ("bare", ["series", "a"], "has no per-year series; import again with --keep-years"),
    ("failed_model", ["series", "a", "--normalize"], "has no per-year totals to normalise by; import again with "
                                                     "Google's totalcounts file among the inputs"),
    ("bare", ["score", "a b"], "it has no MKN model; build one with 'ngramflow mkn"),
    ("failed_model", ["score", "a b"], "its MKN model is incomplete ("),
    ("full", ["count", "a b c d e f"], "'a b c d e f' has 6 tokens; n-grams have at most 5"),
    ("full", ["count", "  "], "an n-gram needs at least one token"),
    ("full", ["next", "a b c d e"], "a prefix has at most 4 tokens"),
    ("full", ["next", "a", "--top", "0"], "argument --top: how many continuations to show, a whole number from 1 "
                                          "to 1,000,000,000; got '0' (see 'ngramflow query DATASET next --help')"),
    ("full", ["next", "a", "--top", "99999999999999999999"], "--top: how many continuations to show, a whole "
                                                             "number from 1 to 1,000,000,000; got '9999999999"),
    ("full", ["next", "a", "--top", "ten"], "--top: how many continuations to show, a whole number"),
    ("full", ["series", "a", "--smooth", "-1"], "argument --smooth: the years on each side, a whole number from 0 "
                                                "to 700; got '-1'"),
    ("full", ["series", "a", "--smooth", "99999999999999999999"], "--smooth: the years on each side, a whole "
                                                                  "number from 0 to 700"),
    ("full", ["series", "a", "--plot", "chart.jpg"], "--plot writes a PNG image; name the file *.png"),
    ("full", ["series", "a", "--plot", "/nonexistent/chart.png"], "the folder of --plot /nonexistent/chart.png"),
    ("full", ["sql", "SELEC 1"], "SQL: Parser Error: syntax error at or near \"SELEC\""),
    ("full", ["sql", "SELECT * FROM ngramz"], "SQL: Catalog Error: Table with name ngramz does not exist!"),
])
def test_user_mistakes_are_one_line_errors(request, capsys, fixture, args, message):
    dataset = request.getfixturevalue(fixture)
    err = one_line_error(capsys, 2, dataset, *args)
    assert err.startswith("ngramflow: error: ") and message in err


def view_sizes(capsys, dataset) -> dict:
    """The number of rows of every view, and a few answers of every subcommand."""
    views = ["mkn_contexts", "mkn_discounts", "mkn_ngrams", "ngrams", "rejects", "totalcounts", "vocabulary"]
    sizes = query_json(capsys, dataset, "sql", "SELECT " + ", ".join(f"(SELECT count(*) FROM {v}) AS {v}"
                                                                     for v in views))
    ngrams = series_ngrams()
    return {"sql": sizes, "count": query_json(capsys, dataset, "count", *ngrams),
            "count -i": query_json(capsys, dataset, "count", "--ignore-case", *ngrams),
            "series": query_json(capsys, dataset, "series", *ngrams, "--normalize"),
            "next": query_json(capsys, dataset, "next", ngrams[0].split()[0]),
            "score": query_json(capsys, dataset, "score", " ".join(ngrams))}


@pytest.mark.parametrize("name, decoy", [
    ("cp[1]", "cp1"),  # issue 12: read_parquet('cp[1]/...') read cp1
    ("all [1]*?{a,b}'s]", "all 1XY{a,b}'s]"),  # what the name says as a glob, the decoy is
    ("back\\slash", "back/slash"),  # DuckDB's glob takes a backslash for a separator
])
def test_a_dataset_path_is_taken_literally(full, capsys, tmp_path, name, decoy):
    shutil.copytree(full, tmp_path / name)
    shutil.copytree(full, tmp_path / decoy)
    for part in (tmp_path / decoy).rglob("*.parquet"):
        part.write_bytes(b"not parquet")  # a read of the decoy fails
    assert view_sizes(capsys, tmp_path / name) == view_sizes(capsys, full)


def test_a_path_duckdb_cannot_read_literally_is_refused(full, capsys, tmp_path):
    dataset = tmp_path / "b\\[1]"
    shutil.copytree(full, dataset)
    err = one_line_error(capsys, 2, dataset, "count", "a")
    assert f"DuckDB cannot read {dataset}: its path has a backslash and one of * ? [" in err


def test_sql_runs_queries_that_read_the_dataset(full, capsys):
    """Reading the dataset stays open to SQL: its views and its files, DESCRIBE, SUMMARIZE, PIVOT with IN."""
    parts = query_json(capsys, full, "sql", f"SELECT count(*) AS n FROM read_parquet("
                                            f"{text(os.path.join(full, 'ngrams', '*', '*.parquet'))})")
    assert parts == query_json(capsys, full, "sql", "SELECT count(*) AS n FROM ngrams")
    assert "ngram" in [r["column_name"] for r in query_json(capsys, full, "sql", "DESCRIBE ngrams")]
    assert len(query_json(capsys, full, "sql", "SUMMARIZE vocabulary")) == 4
    pivot = query_json(capsys, full, "sql", 'PIVOT (SELECT "order" FROM ngrams) ON "order" IN (1, 2) USING count(*)')
    assert list(pivot[0]) == ["1", "2"]


def files_under(folder) -> set:
    return {os.path.join(root, name) for root, dirs, names in os.walk(folder) for name in names + dirs}


#: SQL that reaches beyond the dataset or changes it. {out}: a path outside the dataset; {inside}: one in it;
#: {secret}: a file beside the dataset; {other}: another dataset.
ATTACKS = [
    ("COPY (SELECT 1 AS x) TO {out}", "not COPY"),
    ("COPY (SELECT 1 AS x) TO {inside}", "not COPY"),
    ("SELECT 1; COPY (SELECT 1 AS x) TO {out}", "not COPY"),
    ("EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO {inside}", "not EXPLAIN"),
    ("COPY (PIVOT ngrams ON \"order\" USING count(*)) TO {inside}", "not MULTI"),
    ("EXPORT DATABASE {inside_dir}", "not EXPORT"),
    ("SELECT * FROM read_text({secret})", "Permission Error: Cannot access file"),
    ("SELECT * FROM read_csv({secret})", "Permission Error: Cannot access file"),
    ("SELECT * FROM read_parquet({other})", "Permission Error: Cannot access file"),
    ("SELECT * FROM glob({everything})", "Permission Error: Cannot access file"),
    ("ATTACH {out} AS elsewhere", "not ATTACH"),
    ("ATTACH ':memory:' AS elsewhere", "not ATTACH"),
    ("SET enable_external_access = true", "not SET"),
    ("RESET allowed_directories", "not SET"),
    ("PRAGMA enable_profiling", "not PRAGMA"),
    ("INSTALL httpfs", "not LOAD"),
    ("LOAD parquet", "not LOAD"),
]


@pytest.mark.parametrize("sql, message", ATTACKS)
def test_sql_reaches_only_the_dataset_and_changes_nothing(full, bare, capsys, tmp_path, sql, message):
    secret = tmp_path / "secret.csv"
    secret.write_text("user,password\nroot,hunter2\n")
    before = files_under(tmp_path) | files_under(full)
    err = one_line_error(capsys, 2, full, "sql", sql.format(
        out=text(str(tmp_path / "leak.csv")), inside=text(os.path.join(full, "leak.csv")),
        inside_dir=text(os.path.join(full, "export")), secret=text(str(secret)),
        other=text(os.path.join(bare, "ngrams", "*", "*.parquet")), everything=text(str(tmp_path / "*"))))
    assert err.startswith("ngramflow: error: SQL: ") and message in err
    assert files_under(tmp_path) | files_under(full) == before


@pytest.mark.parametrize("views", [False, True])
def test_every_subcommand_connection_is_sandboxed(full, bare, tmp_path, views):
    """count, series, next and score use the connection without views; sql the one with them."""
    from ngramflow.query.dataset import Dataset

    dataset = Dataset(full)
    con = dataset.connect(views=views)
    assert con.execute(f"SELECT count(*) FROM {dataset.ngrams_of_order(2)}").fetchall()[0][0] > 0
    for sql in [f"SELECT * FROM read_parquet({text(os.path.join(bare, 'ngrams', '*', '*.parquet'))})",
                f"COPY (SELECT 1 AS x) TO {text(str(tmp_path / 'leak.csv'))}",
                f"ATTACH {text(str(tmp_path / 'other.duckdb'))} AS other",
                "LOAD httpfs", "SET enable_external_access = true", "RESET lock_configuration",
                "PRAGMA enable_profiling"]:
        with pytest.raises(duckdb.Error):
            con.execute(sql)
    assert not list(tmp_path.iterdir())


def manifest_of(full) -> dict:
    with open(os.path.join(full, "_manifest.json")) as fh:
        return json.load(fh)


def edited(**fields):
    """A manifest edit: the fields set (orders__1__ngrams for a nested one), or removed when None."""
    def edit(manifest):
        for name, value in fields.items():
            *parents, key = name.split("__")
            section = functools.reduce(dict.__getitem__, parents, manifest)
            if value is None:
                del section[key]
            else:
                section[key] = value
        return json.dumps(manifest).encode()
    return edit


@pytest.mark.parametrize("content, reason", [
    (b"{", "Expecting property name enclosed in double quotes: line 1 column 2"),
    (b"[]", "it should be a JSON object, not an array"),
    (b"{}", '"schema_version" is missing'),
    (b"\xff\xfe{}", "'utf-8' codec can't decode byte 0xff"),
    (edited(schema_version=None), '"schema_version" is missing'),
    (edited(schema_version="1"), '"schema_version" should be an integer, not a string'),
    (edited(schema_version=True), '"schema_version" should be an integer, not true or false'),
    (edited(orders=[1, 2, 3]), '"orders" should be an object, not an array'),
    (edited(orders={"one": {"ngrams": 5}}), '"orders" has an entry "one", which is not an n-gram order'),
    (edited(orders={"1": 724}), '"orders.1" should be an object, not an integer'),
    (edited(orders__1__ngrams="724"), '"orders.1.ngrams" should be an integer, not a string'),
    (edited(orders__2__ngrams=None), '"orders.2.ngrams" is missing'),
    (edited(options=None), '"options" is missing'),
    (edited(options__keep_years="yes"), '"options.keep_years" should be true or false, not a string'),
    (edited(mkn=[3]), '"mkn" should be an object, not an array'),
    (edited(mkn__order="3"), '"mkn.order" should be an integer, not a string'),
])
def test_a_malformed_manifest_is_a_one_line_error(full, capsys, tmp_path, content, reason):
    (tmp_path / "_manifest.json").write_bytes(content if isinstance(content, bytes) else content(manifest_of(full)))
    err = one_line_error(capsys, 2, tmp_path, "count", "a")
    assert err.startswith(f"ngramflow: error: {tmp_path / '_manifest.json'} is not a valid ngramflow manifest: ")
    assert reason in err
