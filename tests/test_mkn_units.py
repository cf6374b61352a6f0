"""The MKN stage's formulas, as its native kernels (transforms/mkn/native.py) compute them, checked against
hand-computed values."""

import math

import pyarrow as pa
import pytest

from ngramflow.errors import UserError
from ngramflow.pipeline.mkn import MknSettings, parse_fallback
from ngramflow.transforms.mkn import arpa, native
from ngramflow.transforms.mkn.adjust import FLOOR, INPUT, ORIGINS, RESERVED, SUFFIX, successor_sums
from ngramflow.transforms.mkn.discount import (KENLM_FALLBACK, DiscountError, Discounts, add_summaries,
                                               discount_record, discount_table, estimate)
from ngramflow.transforms.mkn.probability import LOG10_ZERO

FALLBACK = Discounts(*KENLM_FALLBACK)


def grams(ngrams, **columns) -> pa.Table:
    """A work table: the n-grams, then COLUMNS (lists of numbers)."""
    return pa.table({"ngram": pa.array(ngrams, pa.large_string()), **columns})


def contexts(successors: dict, lower: dict, discounts=FALLBACK) -> native.ContextBucket:
    """The context kernel on SUCCESSORS {ngram: a} and LOWER {ngram: p}."""
    return native.contexts(grams(list(successors), a=pa.array(list(successors.values()), pa.int64())),
                           grams(list(lower), a=pa.array([1] * len(lower), pa.int64()),
                                 p=pa.array(list(lower.values()), pa.float64())), discounts, 1)


def by_ngram(table: pa.Table, column: str) -> dict:
    return dict(zip(table.column("ngram").to_pylist(), table.column(column).to_pylist()))


def test_context_suffix_and_order():
    # Rows go to the bucket of their context (all tokens but the last) or suffix (all but the first); '' for a unigram.
    rows = grams(["a b c", "a"], a=pa.array([1, 2], pa.int64()))
    for key, expected in [(native.CONTEXT, ["a b", ""]), (native.SUFFIX, ["b c", ""])]:
        laid = native.lay_out(rows, key, 1000)
        for bucket, part in laid.buckets():
            for ngram in part.column("ngram").to_pylist():
                assert bucket == native.bucket_of(expected[["a b c", "a"].index(ngram)], 1000), (key, ngram)
    # No backoff after </s> or <unk>; <s> and words merely containing a boundary token's letters back off.
    found = contexts({f"{h} x": 1 for h in ("a _END_", "<unk>", "_START_", "a_END_")},
                     {"a _END_": 0.5, "<unk>": 0.5, "_START_": 0.5, "a_END_": 0.5})
    backoffs = dict(zip(["a _END_", "<unk>", "_START_", "a_END_"], found.lower_log10_backoffs.to_pylist()))
    assert backoffs["a _END_"] == 0.0 and backoffs["<unk>"] == 0.0
    assert backoffs["_START_"] < 0 and backoffs["a_END_"] < 0


@pytest.mark.parametrize("ngram, raw, extensions, expected", [
    ("a b c", 9, 0, (9, INPUT)),                # highest order: the raw count
    ("_START_ a", 5, 2, (5, INPUT)),             # starts a sentence: the raw count
    ("a b", 9, 2, (2, INPUT)),                   # two distinct left extensions
    ("b", 40, 0, (1, FLOOR)),                    # extensions pruned away: at least one existed
    ("b c", None, 3, (3, SUFFIX)),               # missing from the input, implied by 3 longer n-grams
    ("_START_", 12, 0, (0, INPUT)),              # <s> is never predicted: count 0, as in KenLM
    ("<unk>", None, 0, (0, RESERVED)),
    ("_END_", None, 0, (0, RESERVED)),
])
def test_adjusted_counts(ngram, raw, extensions, expected):
    order = ngram.count(" ") + 1
    listed = [] if raw is None else [ngram]
    # Extensions arrive one row per extending n-gram, from any part file.
    found = native.adjust(grams(listed, raw=pa.array([raw] if listed else [], pa.int64())),
                          grams([ngram] * extensions, extensions=pa.array([1] * extensions, pa.int64())),
                          [ngram] if raw is None and not extensions else [], order, 3, 1).table
    assert found.num_rows == 1
    assert (found.column("a")[0].as_py(), ORIGINS[found.column("origin")[0].as_py()]) == expected


def test_discounts_from_count_of_counts_by_hand():
    # Y = 4 / (4 + 2*2) = 1/2; D1 = 1 - 2 Y 2/4 = 1/2; D2 = 2 - 3 Y 1/2 = 5/4; D3 = 3 - 4 Y 1/1 = 1.
    discounts, reason = estimate(2, (4, 2, 1, 1))
    assert reason is None
    assert (discounts.d1, discounts.d2, discounts.d3plus) == pytest.approx((0.5, 1.25, 1.0), abs=1e-12)
    # u = (a - D(a)) / S: what is taken off each count (nothing off a zero count), here S = 56.
    counts = {"h a": 0, "h b": 1, "h c": 2, "h d": 3, "h e": 50}
    u = by_ngram(contexts(counts, {"h": 0.5}, discounts).weighted.table, "u")
    assert [u[g] * 56 for g in counts] == pytest.approx([0.0, 0.5, 0.75, 2.0, 49.0])


def test_discount_bounds_are_kenlms():
    assert estimate(2, (1, 2, 1, 0))[0].d3plus == 3.0  # D3+ = 3 exactly is allowed
    assert estimate(3, (0, 0, 0, 0)) == (None, "no 3-grams have adjusted count 1 (t1 = 0)")
    assert estimate(1, (5, 1, 0, 3))[1] == "no 1-grams have adjusted count 3 (t3 = 0)"
    # Y = 10/12; D2 = 2 - 3 Y 5/1 = -10.5: out of range.
    assert estimate(2, (10, 1, 5, 1)) == (None, "D2 = -10.5 for 2-grams is outside [0, 2]")


def test_fallback_is_recorded_with_its_reason_or_refused():
    summary = [10, 0, 0, 0, 0, 10, 0, 0, 0]
    record = discount_record(3, summary, KENLM_FALLBACK, highest=True)
    assert record["discounts"] == [0.5, 1.0, 1.5] and record["discount_source"] == "fallback"
    assert "t1 = 0" in record["fallback_reason"] and "pruned" in record["fallback_reason"]
    with pytest.raises(DiscountError) as err:
        discount_record(3, summary, None, highest=True)
    message = str(err.value)
    assert "\n" not in message and "--discount-fallback D1 D2 D3" in message
    estimated = discount_record(2, [8, 4, 2, 1, 1, 8, 0, 0, 0], None, highest=False)
    assert estimated["discount_source"] == "estimated" and estimated["fallback_reason"] is None


def test_order_summaries_add_up_and_the_table_covers_every_order():
    # Buckets' summaries: [n-grams, t1..t4, input, suffix, floor, reserved].
    summary = add_summaries([[3, 1, 1, 0, 0, 1, 1, 1, 0], [2, 1, 0, 0, 0, 1, 0, 0, 1]])
    assert summary == [5, 2, 1, 0, 0, 2, 1, 1, 1]
    table = discount_table([(1, summary)], 2, KENLM_FALLBACK)
    assert sorted(table) == [1, 2] and table[2]["ngrams"] == 0 and table[2]["discount_source"] == "fallback"
    assert table[1]["suffix_ngrams_added"] == 1 and table[1]["continuation_floor_applied"] == 1


def test_context_statistics_and_backoff_mass():
    assert successor_sums(pa.array([1, 1, 2, 5, 0]).to_numpy()) == [9, 2, 1, 1]
    found = contexts({"h a": 1, "h b": 1, "h c": 2, "h d": 5, "h e": 0, "z a": 0}, {"h": 0.5, "z": 0.5})
    sums = {row["ngram"]: (row["total"], row["n1"], row["n2"], row["n3plus"]) for row in found.contexts.to_pylist()}
    assert sums == {"h": (9, 2, 1, 1), "z": (0, 0, 0, 0)}
    gamma = by_ngram(found.weighted.table, "gamma")
    assert gamma["h a"] == pytest.approx((0.5 * 2 + 1 * 1 + 1.5 * 1) / 9)
    assert gamma["z a"] == 1.0  # successors that all count 0 observed nothing: all the mass backs off
    assert found.lower_log10_backoffs.to_pylist() == pytest.approx([math.log10((0.5 * 2 + 1 + 1.5) / 9), 0.0])


def test_probabilities_by_hand():
    # Context with sum 4: u(count 2) = (2 - 1) / 4; no mass at all under a zero sum.
    assert by_ngram(contexts({"h a": 2, "h b": 2}, {"h": 1.0}).weighted.table, "u")["h a"] == 0.25
    assert by_ngram(contexts({"h a": 0}, {"h": 1.0}).weighted.table, "u")["h a"] == 0.0
    # Unigrams a:1, b:2, </s>:1 (sum 4, gamma (0.5*2 + 1)/4 = 0.5), |V| = 4 with <unk>: p = u + gamma / |V|;
    # <s> is never predicted: probability 1.
    unigrams = grams(["a", "b", "<unk>", "_START_"], a=pa.array([1, 2, 0, 0], pa.int64()))
    p = by_ngram(native.unigrams(unigrams, [4, 2, 1, 0], FALLBACK, 4, False, 1).table, "p")
    assert [p["a"], p["b"], p["<unk>"], p["_START_"]] == [0.25, 0.375, 0.125, 1.0]
    # p = u + gamma p(suffix), as log10 at the highest order: clamped at 0, LOG10_ZERO for 0.
    weighted = grams(["x a", "x b", "x c"], a=pa.array([1, 1, 1], pa.int64()), u=[1.0000001, 0.0, 0.25],
                     gamma=[0.0, 0.0, 0.5])
    lower = grams(["a", "b", "c"], a=pa.array([1, 1, 1], pa.int64()), p=[0.5, 0.5, 0.5])
    log10 = by_ngram(native.interpolate(weighted, lower, True, 0).table, "p")
    assert log10["x a"] == 0.0 and log10["x b"] == LOG10_ZERO and log10["x c"] == pytest.approx(math.log10(0.5))
    assert by_ngram(native.interpolate(weighted, lower, False, 0).table, "p")["x c"] == 0.5


def test_arpa_lines():
    def line(ngram, prob, backoff):
        return arpa.entry_lines(pa.array([ngram]), pa.array([prob]), pa.array([backoff], pa.float64())).decode()

    assert line("_START_ a _END_", -1.0, None) == "-1\t<s> a </s>\n" and line("a_START_ b", -1.0, None) == "-1\ta_START_ b\n"
    assert line("_START_", -0.0, -0.30102999566) == "0\t<s>\t-0.30103\n"
    assert line("a b", -1.234567891, None) == "-1.234568\ta b\n"
    # C's printf("%.7g"): exponents of two digits at least, trailing zeros dropped; a batch's slice reads its own rows.
    assert line("a", -0.000012345678, 1e7) == "-1.234568e-05\ta\t1e+07\n" and line("a", -99.0, 0.5) == "-99\ta\t0.5\n"
    batch = pa.array(["x", "_START_ b"]).slice(1)
    assert arpa.entry_lines(batch, pa.array([-2.5]), pa.array([None], pa.float64())) == b"-2.5\t<s> b\n"
    assert arpa.header([3, 2]) == "\\data\\\nngram 1=3\nngram 2=2\n\n"


def test_mkn_options():
    assert parse_fallback(["0.5", "1", "1.5"]) == (0.5, 1.0, 1.5)
    assert parse_fallback(["none"]) is None
    for bad in (["1", "2"], ["a", "b", "c"]):
        with pytest.raises(UserError, match="three numbers D1 D2 D3 or 'none'"):
            parse_fallback(bad)
    with pytest.raises(UserError, match=r"D2 must be within \(0, 2\]"):
        MknSettings(3, (0.5, 2.5, 1.0)).validate()
    with pytest.raises(UserError, match="within 1-5"):
        MknSettings(6).validate()
    with pytest.raises(UserError, match="--mkn-memory must be at least 512 MiB"):
        MknSettings(3, memory=100 << 20).validate()
