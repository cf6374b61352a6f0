"""The synthetic corpus generator, checked with small parsers of its own (not the pipeline's)."""

import argparse
import gzip
import json
import os
import re

import pytest

from ngramflow.corpus.synthetic import CorpusReport, add_arguments, generate, run

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "data", "sample")
SAMPLE_BAD = os.path.join(HERE, "data", "sample-bad")
# The arguments the bundled corpora were made with (see test_bundled_corpora_are_current).
SAMPLE_ARGS = dict(rows=60_000, seed=7, orders=(1, 2, 3), formats=("2012", "2020"), malformed=0)
SAMPLE_BAD_ARGS = dict(rows=3_000, seed=7, orders=(1, 2), formats=("2012",), malformed=24)

TAGS = "NOUN|VERB|ADJ|ADV|PRON|DET|ADP|NUM|CONJ|PRT|X|\\."
WILDCARD = re.compile(f"_({TAGS})_")
TAGGED = re.compile(f".+_({TAGS})")
POS_FILES = {f"_{t}_" for t in "NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT".split()}
ASCII_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


# ---------------------------------------------------------------- independent readers


def _number(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"not a count: {text!r}")
    return int(text)


def _ngram(text: str) -> str:
    tokens = text.split(" ")
    if not 1 <= len(tokens) <= 5 or not all(tokens):
        raise ValueError(f"bad n-gram: {text!r}")
    return text


def _cell(year: str, match: str, volume: str) -> tuple[int, int, int]:
    cell = _number(year), _number(match), _number(volume)
    if not 1400 <= cell[0] <= 2100 or cell[1] < 1 or cell[2] < 1:
        raise ValueError(f"bad counts: {cell}")
    return cell


def parse_2012(raw: bytes) -> tuple[str, tuple[int, int, int]]:
    ngram, *cell = raw.decode("utf-8").split("\t")
    if len(cell) != 3:
        raise ValueError("wrong field count")
    return _ngram(ngram), _cell(*cell)


def parse_2020(raw: bytes) -> tuple[str, list[tuple[int, int, int]]]:
    ngram, *cells = raw.decode("utf-8").split("\t")
    if not cells:
        raise ValueError("no year tuples")
    series = []
    for c in cells:
        parts = c.split(",")
        if len(parts) != 3:
            raise ValueError(f"bad tuple {c!r}")
        series.append(_cell(*parts))
    return _ngram(ngram), series


def lines(path) -> list[bytes]:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    assert data == b"" or data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def gz_files(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")
                  for d, _, names in os.walk(root) for n in names if n.endswith(".gz"))


def order_of_2012(rel: str) -> tuple[int, str]:
    m = re.fullmatch(r"2012/googlebooks-eng-all-(\d)gram-20120701-(.+)\.gz", rel)
    return int(m.group(1)), m.group(2)


def read_2012(root) -> dict[int, dict[str, list]]:
    """order -> n-gram -> [(year, match, volume)], from every 2012 file (all lines must parse)."""
    data = {}
    for rel in gz_files(root):
        if rel.startswith("2012/"):
            order, _ = order_of_2012(rel)
            for raw in lines(os.path.join(root, rel)):
                ngram, cell = parse_2012(raw)
                data.setdefault(order, {}).setdefault(ngram, []).append(cell)
    return data


def read_2020(root) -> dict[int, dict[str, list]]:
    data = {}
    for rel in gz_files(root):
        if rel.startswith("2020/"):
            order = int(os.path.basename(rel).split("-")[0])
            for raw in lines(os.path.join(root, rel)):
                ngram, series = parse_2020(raw)
                assert ngram not in data.setdefault(order, {}), f"duplicate {order}-gram {ngram!r}"
                data[order][ngram] = series
    return data


def expected_index(first: str, order: int) -> str:
    """Google's 2012 file index, restated."""
    c = first[0]
    if order == 1:
        if WILDCARD.fullmatch(first) or first in ("_START_", "_END_"):
            return "pos"
        if c.isascii() and c.isalpha():
            return c.lower()
    else:
        if first in POS_FILES:
            return first
        if c.isascii() and c.isalpha():
            second = first[1:2]
            return c.lower() + (second.lower() if second.isascii() and second.isalpha() else "_")
    if c.isascii() and c.isdigit():
        return c
    return "punctuation" if c in ASCII_PUNCTUATION else "other"


@pytest.fixture(scope="module")
def sample():
    return read_2012(SAMPLE), read_2020(SAMPLE)


# ---------------------------------------------------------------- tests


def test_same_arguments_give_the_same_bytes(tmp_path):
    args = dict(rows=5_000, seed=3, orders=(1, 2, 3), malformed=10, files_per_order=3)
    first, second = generate(tmp_path / "a", **args), generate(tmp_path / "b", **args)
    assert first.files == second.files and first.malformed == second.malformed
    for rel in first.files + ["2012/googlebooks-eng-all-totalcounts-20120701.txt", "2020/eng/totalcounts-2"]:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    header = (tmp_path / "a" / first.files[0]).read_bytes()[:10]
    assert header[4:8] == b"\0\0\0\0" and not header[3] & 0x08, "gzip header: no mtime, no file name"
    a, b = (json.loads((tmp_path / d / "corpus.json").read_text()) for d in "ab")
    assert a.pop("out_dir") != b.pop("out_dir") and a == b
    assert generate(tmp_path / "c", **{**args, "seed": 4}).ngrams != first.ngrams


def test_both_formats_encode_the_same_rows(sample):
    by_2012, by_2020 = sample
    assert sorted(by_2012) == sorted(by_2020) == [1, 2, 3]
    for order in by_2012:
        assert by_2012[order] == by_2020[order]


def test_report_matches_the_files(sample):
    report = json.load(open(os.path.join(SAMPLE, "corpus.json")))
    assert report["files"] == gz_files(SAMPLE)
    assert report["malformed"] == [] and report["seed"] == 7
    by_2012, _ = sample
    assert report["ngrams"] == {str(n): len(by_2012[n]) for n in by_2012}
    assert report["rows_2012"] == sum(len(s) for grams in by_2012.values() for s in grams.values())
    assert abs(report["rows_2012"] - SAMPLE_ARGS["rows"]) <= 0.1 * SAMPLE_ARGS["rows"]


def test_2012_files_are_sorted_and_follow_the_index_rule():
    for rel in gz_files(SAMPLE):
        if rel.startswith("2012/"):
            order, index = order_of_2012(rel)
            keys = [(ngram, cell[0]) for ngram, cell in map(parse_2012, lines(os.path.join(SAMPLE, rel)))]
            assert keys, f"{rel} is empty"
            assert all(a < b for a, b in zip(keys, keys[1:])), f"{rel} is not sorted by n-gram, then year"
            assert {expected_index(ngram.split(" ")[0], order) for ngram, _ in keys} == {index}
            assert all(len(ngram.split(" ")) == order for ngram, _ in keys)


def test_2020_shards_are_range_partitioned_with_years_ascending():
    for order in (1, 2, 3):
        shards = [f"2020/eng/{order}-{i:05d}-of-00004.gz" for i in range(4)]
        assert [r for r in gz_files(SAMPLE) if r.startswith(f"2020/eng/{order}-")] == shards
        rows = [parse_2020(raw) for rel in shards for raw in lines(os.path.join(SAMPLE, rel))]
        assert all(a[0] < b[0] for a, b in zip(rows, rows[1:])), "shards are not one sorted run"
        assert all(all(x[0] < y[0] for x, y in zip(s, s[1:])) for _, s in rows)
        assert all(lines(os.path.join(SAMPLE, rel)) for rel in shards)


def test_counts_are_published_and_plausible(sample):
    by_2012, _ = sample
    for grams in by_2012.values():
        for series in grams.values():
            assert sum(m for _, m, _ in series) >= 40
            assert all(1500 <= y <= 2019 and 1 <= v <= m for y, m, v in series)
    firsts = sorted(s[0][0] for grams in by_2012.values() for s in grams.values())
    assert firsts[len(firsts) // 2] > 1800, "first years lean towards recent centuries"
    assert any(len(s) == 1 for s in by_2012[3].values()) and any(len(s) > 60 for s in by_2012[1].values())
    assert any(len(s) < s[-1][0] - s[0][0] + 1 for s in by_2012[1].values()), "gaps"
    matches = sorted(m for s in by_2012[1].values() for _, m, _ in s)
    assert matches[-1] > 1000 * matches[len(matches) // 2], "heavy-tailed counts"


def test_vocabulary_is_realistic(sample):
    by_2012, _ = sample
    unigrams = set(by_2012[1])
    assert any(w != w.lower() and w.lower() in unigrams for w in unigrams), "case variants"
    assert {w for w in unigrams if WILDCARD.fullmatch(w)} == {f"_{t}_" for t in TAGS.replace("\\", "").split("|")}
    assert any(TAGGED.fullmatch(w) and not WILDCARD.fullmatch(w) for w in unigrams)
    assert {'"', "'", ",", "_START_", "_END_"} <= unigrams
    assert any(w.isdigit() for w in unigrams) and any(len(w) == 1 and w.isalpha() for w in unigrams)
    for script in (r"[à-ÿ]", r"[а-я]", r"[α-ω]", r"[\u4e00-\u9fff]"):
        assert any(re.search(script, w) for w in unigrams), script
    for order in (2, 3):
        grams = [g.split(" ") for g in by_2012[order]]
        assert all(set(t) <= unigrams for t in grams), "every token is also a 1-gram"
        assert any(t[0] == "_START_" for t in grams) and any(t[-1] == "_END_" for t in grams)
        assert "_START_" not in {x for t in grams for x in t[1:]}
        assert "_END_" not in {x for t in grams for x in t[:-1]}
        assert any(WILDCARD.fullmatch(x) for t in grams for x in t)
    assert all(w and not any(c.isspace() for c in w) for w in unigrams)


def test_totalcounts_agree_with_the_rows(sample):
    by_2012, _ = sample
    sums = {}
    for order, grams in by_2012.items():
        table = sums.setdefault(order, {})
        for series in grams.values():
            for y, m, v in series:
                total, most = table.get(y, (0, 0))
                table[y] = (total + m, max(most, v))
    for order, table in sums.items():
        text = open(os.path.join(SAMPLE, "2020", "eng", f"totalcounts-{order}")).read()
        cells = [tuple(map(int, c.split(","))) for c in text.split("\t")[1:]]
        assert cells == [(y, m, v) for y, (m, v) in sorted(table.items())]
    text = open(os.path.join(SAMPLE, "2012", "googlebooks-eng-all-totalcounts-20120701.txt")).read()
    assert text.startswith("\t") and text.endswith("\n") and text.count("\n") == 1
    years = sorted(set().union(*sums.values()))
    cells = [tuple(map(int, c.split(","))) for c in text.split("\t")[1:]]
    assert [c[0] for c in cells] == years
    for y, match, page, volume in cells:
        assert match == max(t.get(y, (0, 0))[0] for t in sums.values())
        assert volume == max(t.get(y, (0, 0))[1] for t in sums.values())
        assert volume <= page <= match


def _check_malformed(root, report, clean_root, fmt):
    parse = parse_2012 if fmt == "2012" else parse_2020
    recorded = {}
    for m in report["malformed"]:
        recorded.setdefault(m["file"], set()).add(m["line"])
    for rel in gz_files(root):
        if not rel.startswith(fmt):
            continue
        got, good = lines(os.path.join(root, rel)), []
        for number, raw in enumerate(got, 1):
            if number in recorded.get(rel, ()):
                with pytest.raises(ValueError):
                    parse(raw)
            else:
                parse(raw)
                good.append(raw)
        assert good == lines(os.path.join(clean_root, rel)), "good rows are those of malformed=0"


def test_malformed_lines_are_recorded_where_they_are(tmp_path):
    report = json.load(open(os.path.join(SAMPLE_BAD, "corpus.json")))
    assert len(report["malformed"]) == 24 and all(m["file"].startswith("2012/") for m in report["malformed"])
    kinds = [m["kind"] for m in report["malformed"]]
    assert len(set(kinds)) == 8 and all(kinds.count(k) == 3 for k in kinds)
    generate(tmp_path / "clean", **{**SAMPLE_BAD_ARGS, "malformed": 0})
    _check_malformed(SAMPLE_BAD, report, tmp_path / "clean", "2012")

    args = dict(rows=4_000, seed=2, orders=(2, 3), files_per_order=2)
    both = generate(tmp_path / "both", malformed=16, **args)
    generate(tmp_path / "both-clean", malformed=0, **args)
    for fmt in ("2012", "2020"):
        assert sum(m["file"].startswith(fmt) for m in both.malformed) == 16
        _check_malformed(tmp_path / "both", json.load(open(tmp_path / "both" / "corpus.json")),
                         tmp_path / "both-clean", fmt)


def test_min_total_row_budget_and_rerun_into_the_same_directory(tmp_path):
    generate(tmp_path / "c", rows=20_000, seed=1, files_per_order=7)
    calls = []
    report = generate(tmp_path / "c", rows=8_000, seed=1, orders=(1, 4), formats=("2020",), min_total=0,
                      progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (report.rows_2012, report.rows_2012)
    assert gz_files(tmp_path / "c") == report.files, "no stale files of the first run"
    assert sorted(os.listdir(tmp_path / "c" / "2020" / "eng"))[-2:] == ["totalcounts-1", "totalcounts-4"]
    assert isinstance(report, CorpusReport) and sorted(report.ngrams) == [1, 4]
    assert abs(report.rows_2012 - 8_000) <= 800
    series = [s for grams in read_2020(tmp_path / "c").values() for s in grams.values()]
    assert len(series) == sum(report.ngrams.values())
    assert any(sum(m for _, m, _ in s) < 40 for s in series), "min_total=0 keeps unpublishable n-grams"


@pytest.mark.parametrize("name, args", [(SAMPLE, SAMPLE_ARGS), (SAMPLE_BAD, SAMPLE_BAD_ARGS)])
def test_bundled_corpora_are_current(tmp_path, name, args):
    """The committed corpora are what the generator makes now (compare text: gzip bytes may vary by CPU)."""
    report = generate(tmp_path, **args)
    committed = json.load(open(os.path.join(name, "corpus.json")))
    assert {**dict(report.__dict__, out_dir=None), "ngrams": {str(k): v for k, v in report.ngrams.items()}} == \
        {**committed, "out_dir": None}
    for rel in report.files:
        assert lines(os.path.join(name, rel)) == lines(tmp_path / rel), rel
    for rel in os.listdir(os.path.join(name, "2012")):
        if rel.endswith(".txt"):
            assert open(os.path.join(name, "2012", rel)).read() == (tmp_path / "2012" / rel).read_text()
    assert sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(name) for f in fs) <= 2_000_000


def test_command_line_options(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    add_arguments(parser)
    help_text = " ".join(parser.format_help().split())
    for option in ("--rows", "--seed", "--orders", "--format", "--files-per-order", "--malformed", "--min-total"):
        assert option in help_text
    assert help_text.count("(default:") == 7
    args = parser.parse_args([str(tmp_path), "--rows", "2000", "--orders", "2,1", "--format", "2012",
                              "--malformed", "3", "--seed", "5"])
    report = run(args)
    assert report.ngrams.keys() == {1, 2} and len(report.malformed) == 3
    assert all(f.startswith("2012/") for f in report.files)
    out = capsys.readouterr().out.strip()
    assert str(tmp_path) in out and str(report.rows_2012) in out and "\n" not in out
    with pytest.raises(SystemExit):
        parser.parse_args([str(tmp_path), "--orders", "0,7"])
