"""Vocabulary ids: dense, reserved first, ordered by count then bytes, on a real pipeline."""

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from transforms import counts
from transforms.vocabulary import BuildVocabulary, bucket_first_ids, id_bucket


def _acc(match):
    return counts.accumulate([(2000, match, 1)], keep_years=False)


def test_ids_follow_count_then_bytes_and_reserve_the_specials():
    totals = [
        ("b", _acc(10)), ("a", _acc(10)), ("zz", _acc(99)), ("é", _acc(10)),
        ("a zz", _acc(5)), ("_START_ a", _acc(3)), ("orphan b", _acc(7)),
    ]
    expected = [
        {"id": 0, "token": "<unk>", "match_count": None, "volume_count": None},
        {"id": 1, "token": "_START_", "match_count": None, "volume_count": None},
        {"id": 2, "token": "_END_", "match_count": None, "volume_count": None},
        {"id": 3, "token": "zz", "match_count": 99, "volume_count": 1},
        {"id": 4, "token": "a", "match_count": 10, "volume_count": 1},
        {"id": 5, "token": "b", "match_count": 10, "volume_count": 1},
        {"id": 6, "token": "é", "match_count": 10, "volume_count": 1},
        {"id": 7, "token": "orphan", "match_count": None, "volume_count": None},
    ]
    with beam.Pipeline() as p:
        rows = p | beam.Create(totals) | BuildVocabulary()
        assert_that(rows, equal_to(expected))


def test_bucket_order_matches_the_global_order():
    tokens = [("ab", (5, 1)), ("b", (5, 1)), ("a", (9, 1)), ("abc", (5, 1)), ("x", None), ("", None)]
    by_bucket = sorted(tokens, key=lambda t: (id_bucket(*t), t[0].encode()))
    by_rule = sorted(tokens, key=lambda t: (t[1] is None, -(t[1] or (0,))[0], t[0].encode()))
    assert by_bucket == by_rule
    starts = bucket_first_ids([(id_bucket("a", (9, 1)), 1), (id_bucket("b", (5, 1)), 2)], first_id=3)
    assert starts == {id_bucket("a", (9, 1)): 3, id_bucket("b", (5, 1)): 4}
