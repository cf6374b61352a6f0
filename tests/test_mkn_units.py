"""The MKN stage's pure functions, checked against hand-computed values."""

import math

import pytest

from ngramflow.errors import UserError
from ngramflow.pipeline.mkn import MknSettings, parse_fallback
from ngramflow.transforms.mkn import arpa
from ngramflow.transforms.mkn.adjust import FLOOR, INPUT, RESERVED, SUFFIX, adjusted_count, count_parts, merge_parts
from ngramflow.transforms.mkn.context import backoff_mass, merge_stats, successor_stats
from ngramflow.transforms.mkn.discount import (KENLM_FALLBACK, DiscountError, Discounts, OrderSummaryFn, discount_record,
                                     discount_table, estimate)
from ngramflow.transforms.mkn.grams import can_back_off, context_of, order_of, starts_sentence, suffix_of
from ngramflow.transforms.mkn.probability import (LOG10_ZERO, initial_probability, log10_backoff, log10_prob,
                                        unigram_probability)

FALLBACK = Discounts(*KENLM_FALLBACK)


def test_context_suffix_and_order():
    assert (order_of("a b c"), context_of("a b c"), suffix_of("a b c")) == (3, "a b", "b c")
    assert (order_of("a"), context_of("a"), suffix_of("a")) == (1, "", "")
    assert starts_sentence("_START_ a") and starts_sentence("_START_") and not starts_sentence("a _START_x")
    assert not can_back_off("a _END_") and not can_back_off("<unk>") and can_back_off("_START_")


def test_each_ngram_counts_itself_and_extends_its_suffix():
    assert list(count_parts("a b c", 7)) == [("a b c", (7, 0)), ("b c", (None, 1))]
    assert list(count_parts("a", 7)) == [("a", (7, 0))]
    assert merge_parts([(None, 1), (7, 0), (None, 1), merge_parts([(None, 1)])]) == (7, 3)


@pytest.mark.parametrize("ngram, parts, expected", [
    ("a b c", (9, 0), (9, INPUT)),                # highest order: the raw count
    ("_START_ a", (5, 2), (5, INPUT)),             # starts a sentence: the raw count
    ("a b", (9, 2), (2, INPUT)),                   # two distinct left extensions
    ("b", (40, 0), (1, FLOOR)),                    # extensions pruned away: at least one existed
    ("b c", (None, 3), (3, SUFFIX)),               # missing from the input, implied by 3 longer n-grams
    ("_START_", (12, 0), (0, INPUT)),              # <s> is never predicted: count 0, as in KenLM
    ("<unk>", (None, 0), (0, RESERVED)),
    ("_END_", (None, 0), (0, RESERVED)),
])
def test_adjusted_counts(ngram, parts, expected):
    assert adjusted_count(ngram, parts, 3)[2:] == expected


def test_discounts_from_count_of_counts_by_hand():
    # Y = 4 / (4 + 2*2) = 1/2; D1 = 1 - 2 Y 2/4 = 1/2; D2 = 2 - 3 Y 1/2 = 5/4; D3 = 3 - 4 Y 1/1 = 1.
    discounts, reason = estimate(2, (4, 2, 1, 1))
    assert reason is None
    assert (discounts.d1, discounts.d2, discounts.d3plus) == pytest.approx((0.5, 1.25, 1.0), abs=1e-12)
    assert [discounts.of(c) for c in (0, 1, 2, 3, 50)] == [0.0, 0.5, 1.25, 1.0, 1.0]


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


def test_order_summary_and_table_cover_every_order():
    fn = OrderSummaryFn()
    acc = fn.create_accumulator()
    for count, origin in [(1, INPUT), (1, SUFFIX), (2, INPUT), (7, FLOOR), (0, RESERVED)]:
        acc = fn.add_input(acc, (count, origin))
    assert fn.merge_accumulators([acc, fn.create_accumulator()]) == [5, 2, 1, 0, 0, 2, 1, 1, 1]
    table = discount_table([(1, acc)], 2, KENLM_FALLBACK)
    assert sorted(table) == [1, 2] and table[2]["ngrams"] == 0 and table[2]["discount_source"] == "fallback"
    assert table[1]["suffix_ngrams_added"] == 1 and table[1]["continuation_floor_applied"] == 1


def test_context_statistics_and_backoff_mass():
    stats = merge_stats([successor_stats(c) for c in (1, 1, 2, 5, 0)])
    assert stats == (9, 2, 1, 1)
    assert backoff_mass(stats, FALLBACK) == pytest.approx((0.5 * 2 + 1 * 1 + 1.5 * 1) / 9)
    assert backoff_mass((0, 0, 0, 0), FALLBACK) == 1.0


def test_probabilities_by_hand():
    # Context with sum 4: u(count 2) = (2 - 1) / 4.
    assert initial_probability(2, (4, 0, 2, 0), FALLBACK) == 0.25
    # Unigrams a:1, b:2, </s>:1 (sum 4, gamma (0.5*2 + 1)/4 = 0.5), |V| = 4 with <unk>.
    stats = (4, 2, 1, 0)
    assert unigram_probability("a", 1, stats, FALLBACK, 4) == 0.25
    assert unigram_probability("b", 2, stats, FALLBACK, 4) == 0.375
    assert unigram_probability("<unk>", 0, stats, FALLBACK, 4) == 0.125
    assert unigram_probability("_START_", 0, stats, FALLBACK, 4) == 1.0
    assert log10_prob(1.0000001) == 0.0 and log10_prob(0.0) == LOG10_ZERO
    assert log10_backoff("a b", (4, 0, 2, 0), FALLBACK) == pytest.approx(math.log10(0.5))
    assert log10_backoff("a _END_", (4, 0, 2, 0), FALLBACK) == 0.0
    assert log10_backoff("a b", None, FALLBACK) == 0.0


def test_arpa_lines():
    assert arpa.arpa_ngram("_START_ a _END_") == "<s> a </s>" and arpa.arpa_ngram("a_START_ b") == "a_START_ b"
    assert arpa.entry("_START_", -0.0, -0.30102999566) == "0\t<s>\t-0.30103"
    assert arpa.entry("a b", -1.234567891, None) == "-1.234568\ta b"
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


def test_sum_of_combines_like_its_merge():
    from ngramflow.transforms.mkn.combine import SumOf

    fn = SumOf(merge_stats, (0, 0, 0, 0))
    left = fn.add_input(fn.add_input(fn.create_accumulator(), successor_stats(1)), successor_stats(4))
    right = fn.add_input(fn.create_accumulator(), successor_stats(2))
    assert fn.extract_output(fn.merge_accumulators([left, right])) == (7, 1, 1, 1)
