"""Vocabulary ids: dense, reserved first, ordered by count then bytes, on a real pipeline."""

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.util import assert_that, equal_to

from ngramflow import schemas
from ngramflow.transforms import vocabulary


def _ngrams(*rows):
    return pa.Table.from_pylist([
        {"ngram": n, "order": n.count(" ") + 1, "match_count": m, "volume_count": 1, "first_year": 2000,
         "last_year": 2000, "years": 1} for n, m in rows], schema=schemas.NGRAMS)


EXPECTED = [
    (0, "<unk>", None, None), (1, "_START_", None, None), (2, "_END_", None, None),
    (3, "zz", 99, 1), (4, "a", 10, 1), (5, "b", 10, 1), (6, "é", 10, 1), (7, "orphan", None, None),
]


def test_ids_follow_count_then_bytes_and_reserve_the_specials():
    shards = [(0, _ngrams(("b", 10), ("zz", 99), ("a zz", 5))),
              (1, _ngrams(("a", 10), ("é", 10), ("_START_ a", 3), ("orphan b", 7)))]
    with beam.Pipeline() as p:
        rows = (p | beam.Create(shards) | vocabulary.BuildVocabulary(shards=3)
                  | beam.FlatMapTuple(lambda _name, t: [tuple(r.values()) for r in t.to_pylist()]))
        assert_that(rows, equal_to(EXPECTED))


def test_range_keys_order_tokens_as_the_ids_do():
    counts = [1, 2, 40, 41, 1023, 1024, 1025, 5000, 5001, 10**9, 10**12]
    rows = [(f"{c}-{i}", c) for c in counts for i in range(3)] + [(f"w{i}", None) for i in range(5)]
    tokens = pa.table({"token": [t for t, _ in rows], "match_count": pa.array([c for _, c in rows], pa.int64()),
                       "volume_count": pa.array([c for _, c in rows], pa.int64())})
    keys = vocabulary.range_keys(tokens)
    by_rule = sorted(range(len(rows)), key=lambda i: (rows[i][1] is None, -(rows[i][1] or 0), rows[i][0].encode()))
    by_range = sorted(range(len(rows)), key=lambda i: (keys[i], -(rows[i][1] or 0), rows[i][0].encode()))
    assert by_range == by_rule
    assert len(set(keys)) > len(counts)  # exact small counts are split further by prefix


def test_parts_number_the_whole_vocabulary_without_gaps():
    tokens = vocabulary.distinct_tokens(_ngrams(*[(f"w{i:03d}", 1000 - i // 3) for i in range(300)]))
    halves = [tokens.slice(0, 150), tokens.slice(150)]
    plan = vocabulary.plan_parts([vocabulary.histogram(t) for t in halves], first_id=3, part_tokens=40)
    parts = {}
    for half in halves:
        for part, table in vocabulary.split_by_part(half, plan):
            parts.setdefault(part, []).append(table)
    numbered = pa.concat_tables([vocabulary.number_part(tables) for tables in parts.values()]).sort_by("id")
    assert len(parts) > 5
    assert numbered["id"].to_pylist() == list(range(3, 303))
    assert numbered["token"].to_pylist() == sorted(numbered["token"].to_pylist(), key=lambda t: (-(1000 - int(t[1:]) // 3), t))
