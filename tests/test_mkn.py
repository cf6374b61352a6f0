"""The MKN stage end to end on the embedded runner: hand-computed toy corpora, KenLM's own output
for a real text, normalisation, the ARPA file in KenLM, pruned input and the stage's life cycle."""

import codecs
import contextlib
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from conftest import SAMPLE, import_ok, run_cli, sigint_as_ctrl_c
from ngramflow.corpus.text import count_ngrams, sentences, write_2012
from mkn_reference import SHORT_TEXT, SHORT_TEXT_ORDER_2, ArpaModel
from ngramflow.transforms.sizing import MKN_BUCKET_ROWS_VARIABLE

HERE = os.path.dirname(os.path.abspath(__file__))
LMPLZ_ZEN = os.path.join(HERE, "data", "mkn", "zen-order3.lmplz")


def text_dataset(tmp_path, text: str, order: int, *options, drop_orders=()):
    """Import the n-gram counts of ``text`` (one sentence per line) with an order-``order`` MKN model."""
    counts = count_ngrams(sentences(text.splitlines()), order)
    counts = {ngram: c for ngram, c in counts.items() if ngram.count(" ") + 1 not in drop_orders}
    write_2012(counts, tmp_path / "in")
    return import_ok(tmp_path / "in", tmp_path / "out", "--pos", "keep", "--mkn-order", order,
                     "--arpa", tmp_path / "model.arpa", *options)


def model_of(dataset) -> dict:
    """{ngram: (adjusted count, probability, log10 backoff or None)} from mkn/ngrams."""
    rows = duckdb.sql(f"""SELECT ngram, adjusted_count, log10_prob, log10_backoff
                          FROM read_parquet('{dataset}/mkn/ngrams/*/*.parquet')""").fetchall()
    return {ngram: (count, 10 ** prob, backoff) for ngram, count, prob, backoff in rows}


def mkn_manifest(dataset) -> dict:
    return json.load(open(os.path.join(dataset, "_manifest.json")))["mkn"]


def assert_model(actual: dict, expected: dict):
    assert sorted(actual) == sorted(expected)
    for ngram, (count, prob, backoff) in expected.items():
        got = actual[ngram]
        assert got[0] == count, f"adjusted count of {ngram!r}"
        assert got[1] == pytest.approx(prob, abs=1e-12), f"probability of {ngram!r}"
        if backoff is None:
            assert got[2] is None, f"{ngram!r} has a backoff at the highest order"
        else:
            assert got[2] == pytest.approx(math.log10(backoff), abs=1e-12), f"backoff of {ngram!r}"


def test_short_sentences_order_2_by_hand(tmp_path):
    dataset = text_dataset(tmp_path, SHORT_TEXT, 2)
    assert_model(model_of(dataset), SHORT_TEXT_ORDER_2)  # computed by hand in mkn_reference.py
    section = mkn_manifest(dataset)
    assert section["orders"]["1"]["discounts"] == [0.5, 1.0, 1.5]
    assert section["orders"]["1"]["fallback_reason"] == "no 1-grams have adjusted count 3 (t3 = 0)"
    assert section["orders"]["2"]["discounts"] == pytest.approx([0.2, 1.7, 3.0], abs=1e-12)
    assert section["orders"]["2"]["discount_source"] == "estimated"
    assert section["orders"]["2"]["count_of_counts"] == [1, 2, 1, 0]
    assert section["vocabulary_size"] == 4 and section["fallback_used"] and not section["input_pruned"]


# Repeated n-grams: "x x x" twice and "y x". Every order falls back to 0.5 1 1.5, and every backoff is 1/2.
REPEATED_TEXT = "x x x\nx x x\ny x\n"
# Unigrams x 3 (<s> x, x x, y x), y 1, _END_ 1: sum 5, gamma (0.5*2 + 1.5)/5 = 1/2, |V| = 4.
P_X, P_Y, P_END = 1.5 / 5 + 0.5 / 4, 0.5 / 5 + 0.5 / 4, 0.5 / 5 + 0.5 / 4
# Bigrams: _START_ x 2 and _START_ y 1 (raw), x x 2, x _END_ 2, y x 1 (left extensions among the trigrams).
P_X_X, P_END_X, P_X_Y = 1 / 4 + P_X / 2, 1 / 4 + P_END / 2, 0.5 + P_X / 2
REPEATED_MODEL = {
    "<unk>": (0, 0.5 / 4, 1), "_START_": (0, 1, 0.5), "x": (3, P_X, 0.5), "y": (1, P_Y, 0.5),
    "_END_": (1, P_END, 1),
    "_START_ x": (2, 1 / 3 + P_X / 2, 0.5), "_START_ y": (1, 0.5 / 3 + P_Y / 2, 0.5),
    "x x": (2, P_X_X, 0.5), "x _END_": (2, P_END_X, 1), "y x": (1, P_X_Y, 0.5),
    "_START_ x x": (2, 1 / 2 + P_X_X / 2, None), "x x x": (2, 1 / 4 + P_X_X / 2, None),
    "x x _END_": (2, 1 / 4 + P_END_X / 2, None), "_START_ y x": (1, 0.5 + P_X_Y / 2, None),
    "y x _END_": (1, 0.5 + P_END_X / 2, None),
}


def test_repeated_ngrams_order_3_by_hand(tmp_path):
    dataset = text_dataset(tmp_path, REPEATED_TEXT, 3)
    assert_model(model_of(dataset), REPEATED_MODEL)
    section = mkn_manifest(dataset)
    assert [section["orders"][o]["count_of_counts"] for o in "123"] == [[2, 0, 1, 0], [2, 3, 0, 0], [2, 3, 0, 0]]
    assert all(section["orders"][o]["discount_source"] == "fallback" for o in "123")


def test_lower_order_raw_counts_do_not_matter_and_missing_suffixes_are_added(tmp_path):
    # Without the 1-gram files the unigrams are implied by the bigrams: continuation counts need no raw count.
    dataset = text_dataset(tmp_path, REPEATED_TEXT, 3, drop_orders=(1,))
    assert_model(model_of(dataset), REPEATED_MODEL)
    assert mkn_manifest(dataset)["orders"]["1"]["suffix_ngrams_added"] == 3  # x, y, _END_


def zen_of_python() -> str:
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return codecs.decode(this.s, "rot13") + "\n"


def test_real_text_matches_kenlm_lmplz(tmp_path):
    """lmplz's ARPA and discounts for the Zen of Python (tests/data/mkn), with estimated and fallback orders."""
    dataset = text_dataset(tmp_path, zen_of_python(), 3)
    reference = json.load(open(LMPLZ_ZEN + ".json"))
    section = mkn_manifest(dataset)
    for order, discounts in reference["discounts"].items():
        assert section["orders"][order]["discounts"] == pytest.approx(discounts, abs=1e-6)
        fallback = int(order) in reference["fallback_orders"]
        assert section["orders"][order]["discount_source"] == ("fallback" if fallback else "estimated")
    ours, theirs = ArpaModel(tmp_path / "model.arpa"), ArpaModel(LMPLZ_ZEN + ".arpa")
    assert ours.counts == theirs.counts and sorted(ours.entries) == sorted(theirs.entries)
    for tokens, (prob, backoff) in theirs.entries.items():
        assert ours.entries[tokens][0] == pytest.approx(prob, abs=1e-4), tokens
        assert (ours.entries[tokens][1] or 0) == pytest.approx(backoff or 0, abs=1e-4), tokens


@pytest.fixture(scope="module")
def small_vocabulary(tmp_path_factory):
    """An order-3 model of 400 random sentences over 6 words."""
    rng = random.Random(7)
    words = ["the", "cat", "sat", "on", "a", "mat"]
    text = "\n".join(" ".join(rng.choices(words, weights=[6, 3, 2, 2, 4, 1], k=rng.randint(1, 9)))
                     for _ in range(400))
    tmp = tmp_path_factory.mktemp("small-vocabulary")
    dataset = text_dataset(tmp, text, 3)
    return dataset, tmp / "model.arpa", text


def test_every_context_distribution_sums_to_one(small_vocabulary):
    dataset, arpa_path, _ = small_vocabulary
    section = mkn_manifest(dataset)
    # Six words see every continuation many times, so only the 3-grams have small counts to estimate from.
    assert [section["orders"][o]["discount_source"] for o in "123"] == ["fallback", "fallback", "estimated"]
    model = ArpaModel(arpa_path)
    predicted = [w for w in model.vocabulary if w != "<s>"]
    assert len(predicted) == section["vocabulary_size"] == 8  # 6 words, </s>, <unk>
    contexts = [()] + model.contexts()
    assert len(contexts) == 1 + 7 + 6 * 7  # (), <s> and the 6 words, every <s> w and w w
    for context in contexts:
        total = sum(10 ** model.log10_prob(w, context) for w in predicted)
        assert total == pytest.approx(1, abs=1e-6), context


def test_arpa_loads_in_kenlm_and_scores_sentences(small_vocabulary):
    kenlm = pytest.importorskip("kenlm")
    _, arpa_path, text = small_vocabulary
    reference = ArpaModel(arpa_path)
    model = kenlm.Model(str(arpa_path))
    assert model.order == 3
    for sentence in text.splitlines()[:20] + ["the dog sat on the mat", "mat mat mat", ""]:
        expected = reference.sentence_log10(sentence.split())
        assert model.score(sentence, bos=True, eos=True) == pytest.approx(expected, abs=1e-4), sentence


def test_any_number_of_buckets_gives_the_same_model(small_vocabulary, tmp_path, monkeypatch):
    """The passes join inside hash buckets: many small ones (every context and suffix far from its
    n-grams' buckets) must give exactly the one-bucket model."""
    dataset, _, text = small_vocabulary
    monkeypatch.setenv(MKN_BUCKET_ROWS_VARIABLE, "40")
    many = text_dataset(tmp_path, text, 3)
    assert mkn_manifest(many)["orders"] == mkn_manifest(dataset)["orders"]
    assert len(os.listdir(os.path.join(many, "mkn", "ngrams", "order=3"))) > 5
    assert model_of(many) == model_of(dataset)


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """The bundled sample (Google-style: every n-gram totals >= 40) with an order-3 model from the same job."""
    out = tmp_path_factory.mktemp("pruned") / "out"
    return import_ok(os.path.join(SAMPLE, "2012"), out, "--mkn-order", "3")


def test_pruned_input_uses_the_fallback_and_says_so(pruned):
    section = mkn_manifest(pruned)
    top = section["orders"]["3"]
    assert section["input_pruned"] and section["fallback_used"] and section["discount_fallback"] == [0.5, 1, 1.5]
    assert top["count_of_counts"][0] == 0 and top["discounts"] == [0.5, 1.0, 1.5]
    assert "t1 = 0" in top["fallback_reason"] and "pruned" in top["fallback_reason"]
    assert section["orders"]["1"]["continuation_floor_applied"] > 0
    discounts = duckdb.sql(f"SELECT \"order\", source FROM '{pruned}/mkn/discounts.parquet' ORDER BY 1").fetchall()
    assert discounts[-1] == (3, "fallback")
    counts = duckdb.sql(f"""SELECT "order", count(*) FROM read_parquet('{pruned}/mkn/ngrams/*/*.parquet')
                            GROUP BY 1 ORDER BY 1""").fetchall()
    assert [(str(o), n) for o, n in counts] == [(o, s["ngrams"]) for o, s in section["orders"].items()]


def test_pruned_model_is_still_normalised_and_loads(pruned, tmp_path):
    arpa_path = tmp_path / "pruned.arpa"
    assert run_cli("export-arpa", pruned, arpa_path) == 0
    model = ArpaModel(arpa_path)
    predicted = [w for w in model.vocabulary if w != "<s>"]
    for context in [()] + model.contexts()[::25]:
        assert sum(10 ** model.log10_prob(w, context) for w in predicted) == pytest.approx(1, abs=1e-6)
    contexts = duckdb.sql(f"SELECT count(*) FROM read_parquet('{pruned}/mkn/contexts/*/*.parquet')").fetchall()[0][0]
    assert contexts == len(model.contexts()) + 1 - sum(1 for c in model.contexts() if model.entries[c][1] == 0)


def test_no_fallback_is_a_one_line_error_and_leaves_no_mkn_claim(pruned, tmp_path, capsys):
    dataset = tmp_path / "copy"
    subprocess.run(["cp", "-r", pruned, dataset], check=True)
    assert run_cli("mkn", dataset, "--order", "3", "--overwrite", "--discount-fallback", "none", "-q") == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "no 3-grams have adjusted count 1" in err and "rerun with --discount-fallback D1 D2 D3" in err
    manifest = json.load(open(dataset / "_manifest.json"))
    assert manifest["status"] == "complete" and "mkn" not in manifest
    assert "failed" in (dataset / "mkn" / "_INCOMPLETE").read_text()


def test_mkn_command_on_an_existing_dataset(pruned, tmp_path, capsys):
    dataset = tmp_path / "copy"
    subprocess.run(["cp", "-r", pruned, dataset], check=True)
    assert run_cli("mkn", dataset, "--order", "2") == 2
    assert "already has an order-3 MKN model; pass --overwrite" in capsys.readouterr().err
    assert run_cli("mkn", dataset, "--order", "2", "--overwrite", "--discount-fallback", "0.4", "0.8", "1.2") == 0
    out = capsys.readouterr().out
    assert "MKN model order" in out and "* 2-grams: fallback discounts, because" in out
    section = mkn_manifest(dataset)
    assert section["order"] == 2 and section["orders"]["2"]["discounts"] == [0.4, 0.8, 1.2]
    assert not (dataset / "mkn" / "_INCOMPLETE").exists()
    assert not os.path.exists(dataset / "mkn" / "ngrams" / "order=3")


@pytest.mark.parametrize("args, message", [
    (["mkn", "{missing}", "--order", "3"], "is not a complete ngramflow dataset"),
    (["mkn", "{pruned}", "--order", "5", "--overwrite"], "has no 5-grams (orders present: 1, 2, 3)"),
    (["mkn", "{pruned}", "--order", "2", "--overwrite", "--discount-fallback", "1", "2"], "three numbers"),
    (["mkn", "{pruned}", "--order", "2", "--overwrite", "--mkn-memory", "100m"], "--mkn-memory must be at least 512 MiB"),
    (["mkn", "{pruned}", "--order", "2", "--overwrite", "--mkn-memory", "lots"], "--mkn-memory takes a size"),
    (["export-arpa", "{pruned}", "{existing}"], "already exists; pass --overwrite"),
    (["export-arpa", "{missing}", "{tmp}/x.arpa"], "is not a complete ngramflow dataset"),
])
def test_user_mistakes_are_one_line_errors(pruned, tmp_path, capsys, args, message):
    (tmp_path / "existing.arpa").write_text("")
    paths = {"missing": tmp_path / "nothing", "pruned": pruned, "existing": tmp_path / "existing.arpa", "tmp": tmp_path}
    assert run_cli(*[a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_an_order_the_input_lacks_fails_the_import(tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli("import", os.path.join(SAMPLE, "2012"), "--output", out, "-q", "--mkn-order", "4") == 1
    assert "the input has no 4-grams for --mkn-order 4; import again with an order it has (1, 2, 3)" in \
        capsys.readouterr().err
    assert not (out / "_manifest.json").exists()


def test_export_arpa_needs_a_model(tmp_path, capsys):
    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "plain")
    assert run_cli("export-arpa", dataset, tmp_path / "m.arpa") == 2
    assert "has no MKN model; run 'ngramflow mkn" in capsys.readouterr().err


def test_ctrl_c_during_the_stage_leaves_no_completion_claim(pruned, tmp_path):
    dataset = tmp_path / "copy"
    subprocess.run(["cp", "-r", pruned, dataset], check=True)
    marker = dataset / "mkn" / "_INCOMPLETE"
    proc = subprocess.Popen([sys.executable, "-m", "ngramflow.cli", "mkn", str(dataset), "--order", "3",
                             "--overwrite", "-q"], stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_ctrl_c)
    deadline = time.time() + 60
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    started = time.time()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.time() - started < 15
    assert "interrupted" in err and "Traceback" not in err
    assert "mkn" not in json.load(open(dataset / "_manifest.json"))
    assert "interrupted" in marker.read_text()


def test_ctrl_c_while_an_import_writes_its_model_leaves_no_manifest(tmp_path, monkeypatch):
    from ngramflow.pipeline import run as import_run

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(import_run, "finish_mkn", interrupted)
    out = tmp_path / "out"
    assert run_cli("import", os.path.join(SAMPLE, "2012"), "--output", out, "-q", "--mkn-order", "2") == 130
    assert not (out / "_manifest.json").exists() and (out / "_INCOMPLETE").exists()
