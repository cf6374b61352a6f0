"""Row policy (POS, case, years) and the per-n-gram accumulator, without a pipeline."""

from transforms import counts
from transforms.filters import RowPolicy, fold_case, is_pos_tagged


def test_pos_tagged_tokens():
    assert is_pos_tagged("burnt_VERB") and is_pos_tagged("_NOUN_") and is_pos_tagged("end_.")
    assert not is_pos_tagged("_START_") and not is_pos_tagged("_END_")
    assert not is_pos_tagged("snake_case") and not is_pos_tagged("NOUN")


def test_pos_policy_drops_or_keeps_tagged_ngrams():
    assert RowPolicy(pos="drop").key(["burnt_VERB", "toast"]) is None
    assert RowPolicy(pos="drop").key(["_START_", "the", "_END_"]) == "_START_ the _END_"
    assert RowPolicy(pos="keep").key(["burnt_VERB", "toast"]) == "burnt_VERB toast"


def test_case_folding_spares_tags_and_boundaries():
    assert fold_case("Burnt_VERB") == "burnt_VERB"
    assert fold_case("_NOUN_") == "_NOUN_" and fold_case("_START_") == "_START_"
    assert RowPolicy(lowercase=True).key(["The", "CAT"]) == "the cat"


def test_year_window_is_inclusive():
    series = [(1899, 1, 1), (1900, 2, 1), (1950, 3, 1), (1951, 4, 1)]
    assert RowPolicy(year_min=1900, year_max=1950).years(series) == [(1900, 2, 1), (1950, 3, 1)]
    assert RowPolicy().years(series) is series


def test_distinct_years_survive_merging_variants():
    the = counts.accumulate([(1900, 5, 2), (1901, 1, 1)], keep_years=True)
    The = counts.accumulate([(1901, 2, 2), (1950, 1, 1)], keep_years=True)
    row = counts.to_row("the", counts.merge(the, The))
    assert row == {
        "ngram": "the", "order": 1, "match_count": 9, "volume_count": 6,
        "first_year": 1900, "last_year": 1950, "years": 3,
        "year_series": [
            {"year": 1900, "match_count": 5, "volume_count": 2},
            {"year": 1901, "match_count": 3, "volume_count": 3},
            {"year": 1950, "match_count": 1, "volume_count": 1},
        ],
    }


def test_combine_fn_merges_partials_in_any_grouping():
    fn = counts.SumNgramCounts()
    parts = [counts.accumulate([(y, y - 1800, 1)], keep_years=False) for y in (1801, 1850, 2019)]
    one = fn.extract_output(fn.add_input(fn.add_input(fn.add_input(fn.create_accumulator(), parts[0]), parts[1]), parts[2]))
    two = fn.merge_accumulators([fn.add_input(fn.create_accumulator(), parts[2]), counts.merge(parts[0], parts[1])])
    assert one == two
    assert counts.to_row("a b", one)["order"] == 2
    assert counts.to_row("a b", one)["years"] == 3
