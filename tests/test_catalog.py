import itertools
import string

import pytest

from ngramflow.corpus import catalog, cli
from ngramflow.corpus.catalog import CatalogError, files_from_index, list_files, parse_corpus_spec, totalcounts_file

BASE = "https://storage.googleapis.com/books/ngrams/books/"


def names(files):
    return [f.name for f in files]


def test_2012_eng_bigrams_has_every_index_kind():
    files = list_files("20120701", "eng", 2)
    keys = [f.key for f in files]
    letters = string.ascii_lowercase
    assert set(keys) >= {a + b for a, b in itertools.product(letters, letters)}  # aa..zz
    assert set(keys) >= {a + "_" for a in letters}  # a_..z_
    assert set(keys) >= set(string.digits) | {"other", "punctuation"}
    pos = {"_ADJ_", "_ADP_", "_ADV_", "_CONJ_", "_DET_", "_NOUN_", "_NUM_", "_PRON_", "_PRT_", "_VERB_"}
    assert set(keys) >= pos
    assert len(keys) == len(set(keys)) == 10 + 26 * 27 + 2 + len(pos)
    assert "googlebooks-eng-all-2gram-20120701-a_.gz" in names(files)
    punct = next(f for f in files if f.key == "punctuation")
    assert punct.url == BASE + "googlebooks-eng-all-2gram-20120701-punctuation.gz"
    assert (punct.order, punct.version, punct.lang) == (2, "20120701", "eng")


def test_2012_unigrams_and_known_gap():
    keys = {f.key for f in list_files("20120701", "eng", 1)}
    assert keys == set(string.digits) | set(string.ascii_lowercase) | {"other", "pos", "punctuation"}
    # Google published no English 5-gram file for the prefix "qk".
    assert "qk" not in {f.key for f in list_files("20120701", "eng", 5)}
    assert "qk" in {f.key for f in list_files("20120701", "eng", 4)}


def test_2012_language_spelling_and_totals():
    assert list_files("20120701", "chi_sim", 1)[0].name.startswith("googlebooks-chi-sim-all-1gram-")
    assert totalcounts_file("20120701", "eng-us", 3).url == BASE + "googlebooks-eng-us-all-totalcounts-20120701.txt"
    assert catalog.listing_caveat("20120701", "eng", 2) is None
    assert "--from-index" in catalog.listing_caveat("20120701", "fre", 5)


def test_2020_eng_bigrams_are_exactly_589_shards():
    files = list_files("20200217", "eng", 2)
    assert len(files) == 589
    assert names(files) == [f"2-{i:05d}-of-00589.gz" for i in range(589)]
    assert files[0].url == BASE + "20200217/eng/2-00000-of-00589.gz"
    assert files[-1].name == "2-00588-of-00589.gz"
    assert len(list_files("20200217", "eng", 3)) == 6881


def test_2020_other_languages_and_totals():
    assert list_files("20200217", "chi-sim", 1)[0].url == BASE + "20200217/chi_sim/1-00000-of-00001.gz"
    assert totalcounts_file("20200217", "fre", 4).url == BASE + "20200217/fre/totalcounts-4"
    for lang in catalog.LANGUAGES["20200217"]:
        for n in catalog.ORDERS:
            assert list_files("20200217", lang, n)  # every count is known


def test_default_mirror_is_https():
    # Over plain http anyone on the path could swap a file for another valid gzip.
    assert catalog.BASE_URL == BASE
    assert {f.url.split("://")[0] for f in list_files("20120701", "eng", 1) + list_files("20200217", "eng", 1)} == {"https"}


def test_mirror_base_url():
    f = list_files("20200217", "heb", 2, base_url="http://127.0.0.1:1/m/")[0]
    assert f.url == "http://127.0.0.1:1/m/20200217/heb/2-00000-of-00010.gz"


@pytest.mark.parametrize(
    "version, lang, order, message",
    [
        ("20090715", "eng", 2, "unknown version"),
        ("20120701", "klingon", 2, "unknown language"),
        ("20120701", "eng-1M", 1, "2009 export"),
        ("20200217", "eng", 6, "1..5"),
    ],
)
def test_catalog_rejects_what_does_not_exist(version, lang, order, message):
    with pytest.raises(CatalogError, match=message):
        list_files(version, lang, order)


def test_spec_whole_order():
    spec = parse_corpus_spec("corpus:20120701/eng/2")
    assert (spec.version, spec.lang, spec.order, spec.selection) == ("20120701", "eng", 2, ())
    assert len(spec.resolve()) == len(list_files("20120701", "eng", 2))
    assert str(spec) == "corpus:20120701/eng/2"


def test_spec_selection_by_key_glob_and_totals():
    files = parse_corpus_spec("corpus:20120701/eng/2/ab,a_").resolve()
    assert [f.key for f in files] == ["a_", "ab"]  # catalog order, not spec order
    files = parse_corpus_spec("corpus:20120701/eng/2/_*_,totalcounts").resolve()
    assert [f.key for f in files][:-1] == ["_ADJ_", "_ADP_", "_ADV_", "_CONJ_", "_DET_", "_NOUN_", "_NUM_", "_PRON_", "_PRT_", "_VERB_"]
    assert files[-1].name == "googlebooks-eng-all-totalcounts-20120701.txt"
    assert len(parse_corpus_spec("corpus:20120701/eng/2/z*").resolve()) == 27


def test_spec_selection_2020_numbers_ranges_globs():
    resolve = lambda s: names(parse_corpus_spec(s).resolve())  # noqa: E731
    assert resolve("corpus:20200217/eng/2/0-2,00017") == [
        "2-00000-of-00589.gz",
        "2-00001-of-00589.gz",
        "2-00002-of-00589.gz",
        "2-00017-of-00589.gz",
    ]
    assert resolve("corpus:20200217/eng/2/*-0058[78]-of-*") == ["2-00587-of-00589.gz", "2-00588-of-00589.gz"]
    assert resolve("corpus:20200217/eng/2/totalcounts") == ["totalcounts-2"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("20120701/eng/2", "not a corpus spec"),
        ("corpus:20120701/eng", "expected corpus:VERSION"),
        ("corpus:20120701/eng/two", "ORDER must be a number"),
        ("corpus:20120701/eng/2/a_,,ab", "empty item"),
        ("corpus:20120701/eng/2/a/b", "expected corpus:VERSION"),
    ],
)
def test_bad_specs(text, message):
    with pytest.raises(CatalogError, match=message):
        parse_corpus_spec(text)


def test_selection_that_matches_nothing_is_an_error():
    with pytest.raises(CatalogError, match="'qq_' matches no file"):
        parse_corpus_spec("corpus:20120701/eng/2/ab,qq_").resolve()
    with pytest.raises(CatalogError, match="'600' matches no file"):
        parse_corpus_spec("corpus:20200217/eng/2/600").resolve()


def test_files_from_index_page():
    page = """<html><body>
      <a href="2-00000-of-00003.gz">one</a>
      <a href='http://mirror.example/books/20200217/eng/2-00001-of-00003.gz'>two</a>
      <a href="../fre/2-00002-of-00003.gz">other language</a>
      <a href="2-00002-of-00003.gz">three</a> <a href="2-00002-of-00003.gz">dup</a>
      <a href="totalcounts-2">totals</a> <a name="anchor">x</a>
    </body></html>"""
    page_url = "http://127.0.0.1:9/books/20200217/eng/eng-2-ngrams_exports.html"
    files = files_from_index(page, page_url, "20200217", "eng", 2)
    assert [(f.key, f.url) for f in files] == [
        ("0", "http://127.0.0.1:9/books/20200217/eng/2-00000-of-00003.gz"),
        ("1", "http://mirror.example/books/20200217/eng/2-00001-of-00003.gz"),
        ("2", "http://127.0.0.1:9/books/20200217/eng/2-00002-of-00003.gz"),
    ]
    v2 = '<a href="googlebooks-fre-all-5gram-20120701-ab.gz">x</a><a href="googlebooks-fre-all-5gram-20090715-0.csv.zip">y</a>'
    files = files_from_index(v2, "http://127.0.0.1:9/books/datasetsv2.html", "20120701", "fre", 5)
    assert [f.key for f in files] == ["ab"]
    with pytest.raises(CatalogError, match="links no"):
        files_from_index(v2, "http://127.0.0.1:9/books/datasetsv2.html", "20120701", "ger", 5)


def test_cli_list(capsys):
    assert cli.main(["list", "--version", "20200217", "--lang", "eng", "--order", "2", "--urls-only"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 589 and lines[0] == BASE + "20200217/eng/2-00000-of-00589.gz"
    assert "totalcounts-2" in err

    assert cli.main(["list", "corpus:20120701/fre/2/ab", "--mirror", "http://127.0.0.1:9/x"]) == 0
    out, err = capsys.readouterr()
    assert out == "googlebooks-fre-all-2gram-20120701-ab.gz\thttp://127.0.0.1:9/x/googlebooks-fre-all-2gram-20120701-ab.gz\n"
    assert "note:" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["list", "--version", "20120701", "--lang", "eng"], "missing --order"),
        (["list", "corpus:20120701/eng/2", "--lang", "eng"], "not both"),
        (["list", "corpus:20120701/xx/2"], "unknown language"),
        (["list", "corpus:20120701/eng/2/nope"], "matches no file"),
    ],
)
def test_cli_list_usage_errors_are_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_help_explains_options(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["download", "--help"])
    assert exit.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    phrases = ("--cache", "--parallel", "default: 4", "--retries", "default: 8", "--retry-time", "default: 3600")
    for phrase in (*phrases, "--timeout", "default: 60", "--mirror", "--from-index", "default: " + BASE):
        assert phrase in text
