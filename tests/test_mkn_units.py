"""The MKN stage's formulas, as the SQL its passes run, checked against hand-computed values."""

import math

import duckdb
import pyarrow as pa
import pytest

from ngramflow.errors import UserError
from ngramflow.pipeline.mkn import MknSettings, parse_fallback
from ngramflow.transforms.mkn import arpa
from ngramflow.transforms.mkn.adjust import FLOOR, INPUT, ORIGINS, RESERVED, SUCCESSOR_SUMS, SUFFIX, adjusted_sql
from ngramflow.transforms.mkn.discount import (KENLM_FALLBACK, DiscountError, Discounts, add_summaries, backoff_mass,
                                     discount_record, discount_table, estimate)
from ngramflow.transforms.mkn.grams import can_back_off, context_of, starts_sentence, suffix_of
from ngramflow.transforms.mkn.probability import LOG10_ZERO, discounted, log10_prob
from ngramflow.transforms.mkn.tables import double, text

FALLBACK = Discounts(*KENLM_FALLBACK)


def sql(expression: str, **columns):
    """EXPRESSION evaluated in DuckDB over one row of COLUMNS (SQL literals)."""
    names = ", ".join(f"{value} AS {name}" for name, value in columns.items()) or "1 AS unused"
    return duckdb.sql(f"SELECT {expression} FROM (SELECT {names})").fetchall()[0][0]


def test_context_suffix_and_order():
    for ngram, context, suffix in [("a b c", "a b", "b c"), ("a", "", "")]:
        assert (sql(context_of("g"), g=text(ngram)), sql(suffix_of("g"), g=text(ngram))) == (context, suffix)
    assert all(sql(starts_sentence("g"), g=text(g)) for g in ("_START_ a", "_START_"))
    assert not sql(starts_sentence("g"), g=text("a _START_x"))
    assert not sql(can_back_off("g"), g=text("a _END_")) and not sql(can_back_off("g"), g=text("<unk>"))
    assert sql(can_back_off("g"), g=text("_START_"))


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
    row = duckdb.sql(f"SELECT {adjusted_sql(order, 3)} FROM (SELECT {text(ngram)} AS ngram, "
                     f"{'NULL' if raw is None else raw}::BIGINT AS raw, {extensions}::BIGINT AS extensions)").fetchall()[0]
    assert (row[0], ORIGINS[row[1]]) == expected


def test_discounts_from_count_of_counts_by_hand():
    # Y = 4 / (4 + 2*2) = 1/2; D1 = 1 - 2 Y 2/4 = 1/2; D2 = 2 - 3 Y 1/2 = 5/4; D3 = 3 - 4 Y 1/1 = 1.
    discounts, reason = estimate(2, (4, 2, 1, 1))
    assert reason is None
    assert (discounts.d1, discounts.d2, discounts.d3plus) == pytest.approx((0.5, 1.25, 1.0), abs=1e-12)
    # u = (a - D(a)) / S with S = 1: what is taken off each count (nothing off a zero count).
    assert [sql(discounted(str(c), "1", discounts)) for c in (0, 1, 2, 3, 50)] == \
        pytest.approx([0.0, 0.5, 0.75, 2.0, 49.0])


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
    counts = ", ".join(f"({c})" for c in (1, 1, 2, 5, 0))
    stats = duckdb.sql(f"SELECT {SUCCESSOR_SUMS} FROM (VALUES {counts}) t(a)").fetchall()[0]
    assert stats == (9, 2, 1, 1)
    gamma = backoff_mass("total", "n1", "n2", "n3plus", FALLBACK)
    assert sql(gamma, total="9", n1="2", n2="1", n3plus="1") == pytest.approx((0.5 * 2 + 1 * 1 + 1.5 * 1) / 9)
    assert sql(gamma, total="0", n1="0", n2="0", n3plus="0") == 1.0


def test_probabilities_by_hand():
    # Context with sum 4: u(count 2) = (2 - 1) / 4; no mass at all under a zero sum.
    assert sql(discounted("2", "4", FALLBACK)) == 0.25 and sql(discounted("2", "0", FALLBACK)) == 0.0
    # Unigrams a:1, b:2, </s>:1 (sum 4, gamma (0.5*2 + 1)/4 = 0.5), |V| = 4 with <unk>: p = u + gamma / |V|.
    uniform = sql(backoff_mass("4", "2", "1", "0", FALLBACK)) / 4
    assert [sql(discounted(c, "4", FALLBACK)) + uniform for c in ("1", "2", "0")] == [0.25, 0.375, 0.125]
    assert sql(log10_prob(double(1.0000001))) == 0.0 and sql(log10_prob(double(0.0))) == LOG10_ZERO
    assert sql(log10_prob(double(0.5))) == pytest.approx(math.log10(0.5))


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
