"""Vocabulary ids: dense, reserved first, ordered by count then bytes, on a real pipeline."""

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.util import assert_that, equal_to

import schemas
from transforms import vocabulary


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


def test_ranges_split_the_id_space_without_gaps():
    tokens = vocabulary.tokens_of(_ngrams(*[(f"w{i:03d}", 1000 - i // 3) for i in range(300)]))
    plan = vocabulary.plan_ranges(vocabulary.histogram(tokens), first_id=3, range_tokens=40)
    numbered = [vocabulary.number_range(t for _, t in group)
                for group in _groups(vocabulary.split_by_range(tokens, plan))]
    ids = sorted(i for table in numbered for i in table["id"].to_pylist())
    assert ids == list(range(3, 303)) and len(numbered) > 5
    whole = pa.concat_tables(numbered).sort_by("id")
    assert whole["token"].to_pylist()[:4] == ["w000", "w001", "w002", "w003"]


def _groups(pairs):
    grouped = {}
    for key, table in pairs:
        grouped.setdefault(key, []).append((key, table))
    return grouped.values()
