"""Row policy, run collapse and run merging on Arrow tables, without a pipeline."""

import pyarrow as pa

from ngramflow.transforms import columnar, merge, total
from ngramflow.transforms.collapse import collapse
from ngramflow.transforms.parse import ROW_SCHEMA
from ngramflow.transforms.policy import RowPolicy, fold_case


def _rows(*rows):
    return pa.Table.from_pylist([dict(zip(ROW_SCHEMA.names, r)) for r in rows], schema=ROW_SCHEMA)


def _collapse(rows, policy, keep_years):
    return collapse(rows, columnar.run_starts(rows["ngram"].combine_chunks()), policy, keep_years)


def _totals(runs_table):
    return total.to_ngram_table(merge.merge_runs(runs_table)).to_pylist()


def test_case_folding_spares_tags_and_boundaries():
    assert fold_case("Burnt_VERB") == "burnt_VERB"
    assert fold_case("_NOUN_") == "_NOUN_" and fold_case("_START_") == "_START_"
    assert fold_case("ÉTÉ") == "été"


def test_pos_policy_drops_tagged_ngrams_but_keeps_boundaries():
    table = _rows(("burnt_VERB toast", 1999, 4, 4), ("_NOUN_ x", 1999, 1, 1), ("end_.", 1999, 1, 1),
                  ("_START_ the _END_", 2000, 7, 3), ("snake_case NOUN", 2000, 2, 1))
    kept, dropped = _collapse(table, RowPolicy(pos="drop"), keep_years=False)
    assert kept["ngram"].to_pylist() == ["_START_ the _END_", "snake_case NOUN"] and dropped == 3
    kept, dropped = _collapse(table, RowPolicy(pos="keep"), keep_years=False)
    assert kept.num_rows == 5 and dropped == 0


def test_year_window_is_inclusive_and_applies_before_summing():
    table = _rows(("a", 1899, 1, 1), ("a", 1900, 2, 1), ("a", 1950, 3, 1), ("a", 1951, 4, 1))
    kept, dropped = _collapse(table, RowPolicy(year_min=1900, year_max=1950), keep_years=False)
    assert _totals(kept) == [{"ngram": "a", "order": 1, "match_count": 5, "volume_count": 2,
                              "first_year": 1900, "last_year": 1950, "years": 2}]
    assert dropped == 2


def test_consecutive_rows_collapse_into_runs():
    table = _rows(("a b", 1900, 1, 1), ("a b", 1901, 2, 1), ("a c", 1900, 5, 5), ("a b", 1902, 1, 1))
    collapsed, _ = _collapse(table, RowPolicy(), keep_years=False)
    assert collapsed["ngram"].to_pylist() == ["a b", "a c", "a b"]
    assert collapsed["match"].to_pylist() == [3, 5, 1]


def test_distinct_years_survive_merging_case_variants():
    table = _rows(("the", 1900, 5, 2), ("the", 1901, 1, 1), ("The", 1901, 2, 2), ("The", 1950, 1, 1))
    collapsed, _ = _collapse(table, RowPolicy(lowercase=True), keep_years=True)
    assert collapsed.num_rows == 2
    assert _totals(collapsed) == [{
        "ngram": "the", "order": 1, "match_count": 9, "volume_count": 6,
        "first_year": 1900, "last_year": 1950, "years": 3,
        "year_series": [
            {"year": 1900, "match_count": 5, "volume_count": 2},
            {"year": 1901, "match_count": 3, "volume_count": 3},
            {"year": 1950, "match_count": 1, "volume_count": 1},
        ],
    }]


def test_year_masks_span_the_whole_year_range():
    table = _rows(("x", 1400, 1, 1), ("x", 2100, 1, 1), ("x", 1407, 1, 1), ("x", 1408, 1, 1))
    collapsed, _ = _collapse(table, RowPolicy(), keep_years=False)
    first, last, count = columnar.mask_stats(collapsed["years"])
    assert (first[0], last[0], count[0]) == (1400, 2100, 4)


def test_merging_runs_gives_the_same_totals_in_any_grouping():
    parts = [_collapse(_rows((w, y, y - 1800, 1)), RowPolicy(), False)[0]
             for w, y in (("b", 1801), ("a", 1850), ("b", 2019), ("a", 1850))]
    one = merge.merge_runs(pa.concat_tables(parts))
    two = merge.merge_runs(pa.concat_tables([merge.merge_runs(pa.concat_tables([parts[3], parts[0]])),
                                             parts[2], parts[1]]))
    totals = total.to_ngram_table(one).to_pylist()
    assert totals == total.to_ngram_table(two).to_pylist()
    assert [(t["ngram"], t["match_count"], t["years"]) for t in totals] == [("a", 100, 1), ("b", 220, 2)]


def test_shards_are_stable_and_spread():
    keys = pa.array([f"word{i} next" for i in range(10_000)])
    shards = columnar.shard_of(keys, 8)
    assert (shards == columnar.shard_of(keys, 8)).all()
    assert (columnar.shard_of(keys.slice(100, 50), 8) == shards[100:150]).all()
    counts_per_shard = [int((shards == s).sum()) for s in range(8)]
    assert min(counts_per_shard) > 1000, counts_per_shard
