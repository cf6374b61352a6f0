"""The sample sort that cuts hash shards into contiguous, bounded ranges (transforms/sample_sort.py), on a
real pipeline."""

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from ngramflow.transforms.sample_sort import CutIntoParts
from ngramflow.transforms.shards import split_by_shard


def test_parts_are_contiguous_ranges_of_about_the_weight_asked_for():
    rng = np.random.default_rng(3)
    words = sorted({"".join(rng.choice(list("abcdefghij"), rng.integers(3, 12))) for _ in range(40_000)})
    table = pa.table({"ngram": words, "match_count": rng.integers(1, 100, len(words))})
    shards = [(shard, t.sort_by("ngram")) for shard, t in split_by_shard(table, "ngram", 7)]
    part_bytes = table.nbytes / 25

    def check(pieces):
        parts = {}
        for part, piece in pieces:
            parts.setdefault(part, []).append(piece)
        ranges = [pa.concat_tables(parts[p]).sort_by("ngram") for p in sorted(parts)]
        keys = [k for r in ranges for k in r["ngram"].to_pylist()]
        assert keys == words, "every row once, parts in key order, each a contiguous range"
        assert 15 <= len(ranges) <= 40
        assert max(r.nbytes for r in ranges) <= 2 * part_bytes

    with TestPipeline() as p:
        pieces = p | beam.Create(shards) | CutIntoParts("ngram", 16, part_bytes, lambda t: t.nbytes, shards=7)
        assert_that(pieces | beam.combiners.ToList(), lambda found: check(found[0]))
