"""Vocabulary ids: dense, reserved first, ordered by count then bytes, on a real pipeline."""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.testing.util import assert_that, equal_to

from ngramflow import schemas
from ngramflow.transforms import sample_sort, vocabulary
from ngramflow.transforms.shards import split_by_shard


def _ngrams(*rows):
    return pa.Table.from_pylist([
        {"ngram": n, "order": n.count(" ") + 1, "match_count": m, "volume_count": 1, "first_year": 2000,
         "last_year": 2000, "years": 1} for n, m in rows], schema=schemas.NGRAMS)


EXPECTED = [
    (0, "<unk>", None, None), (1, "_START_", None, None), (2, "_END_", None, None),
    (3, "zz", 99, 1), (4, "a", 10, 1), (5, "b", 10, 1), (6, "é", 10, 1), (7, "orphan", None, None),
]


def test_sorted_unigrams_are_their_own_tokens():
    unigrams = _ngrams(("_START_", 4), ("a", 3), ("b", 7), ("zz", 1), ("é", 2))
    assert vocabulary.distinct_tokens(unigrams, unigrams=True).equals(vocabulary.distinct_tokens(unigrams))


def test_tokens_of_tables_in_chunks_are_those_of_the_rows_in_one():
    """A range's merge gives its tables one order each, 1-grams first, as the chunks of one table; Flink's
    vocabulary any table (its unigrams in a later chunk too): the same tokens, with their unigram counts."""
    unigrams = _ngrams(("a", 3), ("b", 7), ("zz", 1))
    bigrams, trigrams = _ngrams(("a orphan", 5), ("b a", 2), ("zz é", 4)), _ngrams(("a b c", 1))
    expected = [("a", 3), ("b", 7), ("c", None), ("orphan", None), ("zz", 1), ("é", None)]
    for tables in ([unigrams, bigrams, trigrams], [bigrams, unigrams, trigrams], [trigrams, bigrams, unigrams]):
        chunked = pa.concat_tables(tables)
        assert chunked["ngram"].num_chunks == 3
        tokens = vocabulary.distinct_tokens(chunked)
        assert tokens.equals(vocabulary.distinct_tokens(chunked.combine_chunks()))
        assert list(zip(tokens["token"].to_pylist(), tokens["match_count"].to_pylist())) == expected


def test_ids_follow_count_then_bytes_and_reserve_the_specials():
    shards = [(0, _ngrams(("b", 10), ("zz", 99), ("a zz", 5))),
              (1, _ngrams(("a", 10), ("é", 10), ("_START_ a", 3), ("orphan b", 7)))]
    with beam.Pipeline() as p:
        rows = (p | beam.Create(shards) | vocabulary.BuildVocabulary(shards=3)
                  | beam.FlatMapTuple(lambda _name, t: [tuple(r.values()) for r in t.to_pylist()]))
        assert_that(rows, equal_to(EXPECTED))


def test_ranks_order_tokens_as_the_ids_do():
    counts = [1, 2, 40, 41, 1023, 1024, 1025, 5000, 5001, 10**9, 10**12]
    rows = [(f"{c}-{i}", c) for c in counts for i in range(3)] + [(f"w{i}", None) for i in range(5)] + [("é", 2)]
    tokens = pa.table({"token": [t for t, _ in rows], "match_count": pa.array([c for _, c in rows], pa.int64()),
                       "volume_count": pa.array([c for _, c in rows], pa.int64())})
    by_rule = sorted(rows, key=lambda r: (r[1] is None, -(r[1] or 0), r[0].encode()))
    ranked = vocabulary.sort_by_rank(vocabulary.with_rank(tokens))
    assert list(zip(ranked["token"].to_pylist(), ranked["match_count"].to_pylist())) == by_rule


def test_tokens_ranked_in_pieces_then_merged_come_out_in_id_order():
    """The external sort's two steps: buffers of tokens in token order (chunks, counts with nulls and ties)
    each put in id order (a rank, which holds the token and its match count, and the volume count), then those
    ranked pieces merged back to tokens, with their counts."""
    counts = [None, 7, 2, 7, None, 2, 10**12, 0, 7]
    rows = sorted((f"t{i:02d}-{c}", c, None if c is None else c + 1) for i, c in enumerate(counts * 3))
    table = _tokens(*rows)
    by_rule = sorted(rows, key=lambda r: (r[1] is None, -(r[1] or 0), r[0].encode()))
    halves = [pa.Table.from_batches(table.slice(start, 14).to_batches(max_chunksize=5)) for start in (0, 14)]
    ranked = [vocabulary.rank_tokens_in_order(half) for half in halves]
    for half, piece in zip(halves, ranked):
        assert piece.column_names == ["rank", "volume_count"]
        assert piece["rank"].to_pylist() == vocabulary.sort_by_rank(vocabulary.with_rank(half))["rank"].to_pylist()
    merged = vocabulary.tokens_by_rank(pa.concat_tables(ranked))
    assert merged.schema == vocabulary.TOKENS
    assert list(zip(*(merged[c].to_pylist() for c in ("token", "match_count", "volume_count")))) == by_rule


def test_sample_sort_numbers_the_whole_vocabulary_without_gaps():
    """Shards of tokens, sampled, cut at the splitters into parts, each numbered on its own from the parts'
    sizes: consecutive ids in id order, over parts of about the rows asked for."""
    tokens = vocabulary.distinct_tokens(_ngrams(*[(f"w{i:03d}", 1000 - i // 3) for i in range(600)]))
    shards = [vocabulary.with_rank(t) for _, t in split_by_shard(tokens, "token", 3)]
    cuts = sample_sort.splitters([sample_sort.sample(t, "rank", 4, 4) for t in shards], part_weight=32)
    pieces = [piece for t in shards for piece in sample_sort.cut(t, "rank", cuts)]
    starts = dict(vocabulary.first_ids([(part, t.num_rows) for part, t in pieces]))
    numbered = pa.concat_tables([
        vocabulary.number_part({"first_id": [first], "tokens": [t.drop_columns(["rank"]) for p, t in pieces if p == part]})
        for part, first in starts.items()]).sort_by("id")
    assert len(cuts) > 5 and len(starts) == len(cuts) + 1
    assert numbered["id"].to_pylist() == list(range(3, 603))
    assert numbered["token"].to_pylist() == sorted(tokens["token"].to_pylist(),
                                                   key=lambda t: (-(1000 - int(t[1:]) // 3), t))


def test_a_table_without_samples_is_one_part():
    tokens = vocabulary.with_rank(vocabulary.distinct_tokens(_ngrams(("a", 1), ("b", 2))))
    cuts = sample_sort.splitters([sample_sort.sample(tokens, "rank", 1 << 20, 1 << 20)], part_weight=1 << 20)
    assert len(cuts) == 0 and [p for p, _ in sample_sort.cut(tokens, "rank", cuts)] == [0]


def _tokens(*rows):
    return pa.table({"token": [t for t, _, _ in rows], "match_count": pa.array([m for _, m, _ in rows], pa.int64()),
                     "volume_count": pa.array([v for _, _, v in rows], pa.int64())})


def test_merged_tokens_keep_the_row_with_their_counts():
    """Sorted pieces (of token run files): each token once, with the counts of its one counted row, whichever
    piece holds it."""
    pieces = [_tokens(("a", None, None), ("b", 5, 2), ("c", None, None)), _tokens(("a", 7, 3), ("b", None, None)),
              _tokens(("b", None, None), ("c", None, None), ("d", 0, 0))]
    merged = vocabulary.merge_tokens(pa.concat_tables(pieces))
    assert merged.to_pylist() == [{"token": t, "match_count": m, "volume_count": v} for t, m, v in
                                  [("a", 7, 3), ("b", 5, 2), ("c", None, None), ("d", 0, 0)]]


def test_uncounted_tokens_are_the_merged_tokens_without_a_counted_row():
    """The token pass's last merge keeps each token none of whose rows, in any piece, has a count: what
    merge_tokens keeps with null counts. Random sorted pieces, some in order already, one counted throughout."""
    rng = np.random.default_rng(5)
    words = [f"w{k:03d}" for k in range(400)]
    for pieces_count in (1, 2, 3, 9, 40):
        pieces = []
        for _ in range(pieces_count):
            chosen = sorted(set(rng.choice(words, rng.integers(0, 60)).tolist()))
            counts = [int(c) if c >= 0 else None for c in rng.integers(-3, 5, len(chosen))]
            pieces.append(_tokens(*((t, c, c) for t, c in zip(chosen, counts))).cast(vocabulary.TOKENS))
        pieces.append(_tokens(*((t, 1, 1) for t in words[::7])))
        table = pa.concat_tables(pieces)
        expected = vocabulary.merge_tokens(table)
        expected = expected.filter(pc.is_null(expected["match_count"]))
        uncounted = vocabulary.uncounted_tokens(table)
        assert uncounted.schema == vocabulary.TOKENS and uncounted.to_pylist() == expected.to_pylist()
        assert uncounted.num_rows and not any(t in words[::7] for t in uncounted["token"].to_pylist())
    assert vocabulary.uncounted_tokens(_tokens(("a", 1, 1), ("b", 0, 0))).num_rows == 0
    assert vocabulary.uncounted_tokens(_tokens()).num_rows == 0


def test_reserved_tokens_are_split_from_sorted_tokens_wherever_they_lie():
    inside = _tokens(("A", 1, 1), ("_END_", 4, 1), ("_START_", None, None), ("a", 2, 2))
    found, others = vocabulary.split_reserved(inside)
    assert found["token"].to_pylist() == ["_END_", "_START_"] and others["token"].to_pylist() == ["A", "a"]
    # "_" lies between these two, but no reserved token is among them
    between = _tokens(("Z", 1, 1), ("a", 2, 2))
    for tokens in (between, _tokens(("a", 1, 1), ("b", 2, 2)), _tokens()):
        found, others = vocabulary.split_reserved(tokens)
        assert found.num_rows == 0 and others.equals(tokens)


def test_token_runs_rank_unigram_rows_as_they_come_and_cache_only_longer_ngrams_tokens(tmp_path):
    """Every unigram row is ranked as it comes (a buffer in token order, in id order once spilled), the
    reserved tokens apart; of a table of unigrams alone before any longer n-gram only the n-gram file it is
    written to is named, with its first and last n-gram and rows: a worker of 1-grams alone makes no cache of
    tokens and writes no run of them. The first table of longer n-grams makes the cache, out of the budget of
    both buffers; every token of longer n-grams reaches the token runs, a unigram's of the same table with its
    counts; and a table of unigrams alone after it is written to its own run as it comes."""
    budget = 1 << 20
    tokens = vocabulary.TokenRuns(str(tmp_path), budget)
    unigrams = str(tmp_path / "order=1" / "piece-0.parquet")
    assert tokens.add([_ngrams(("a", 3), ("b", 7))], unigrams) == []
    assert tokens.add([_ngrams(("_START_", 2), ("c", 5))], unigrams) == []
    assert tokens.recent is None and tokens.spiller.buffer == [] and tokens.spiller.budget == budget
    assert tokens.ranked.budget == budget // 2
    tokens.add([_ngrams(("a c", 1), ("b d", 1))], "no unigrams here")
    assert tokens.recent is not None and tokens.spiller.budget == 2 * tokens.ranked.budget == budget // 2
    tokens.add([_ngrams(("c d", 1), ("d e", 1))], "no unigrams here")
    assert tokens.spiller.buffer[-1]["token"].to_pylist() == ["e"]  # "c" and "d" given by the table before
    tokens.add([_ngrams(("f", 4)), _ngrams(("f g", 1))], "not alone")  # a range's merge of several orders
    tokens.add([_ngrams(("h", 6), ("i", 1))], "written")
    runs = tokens.flush()
    assert [run.kind for run in runs] == ["ranked", "tokens", "unigrams", "unigram-file", "reserved"]
    assert (runs[3].path, runs[3].rows, runs[3].batches) == (unigrams, 4, (("a", "c", 4),))
    ranked, token_rows, unigram_rows, _, reserved = runs
    rows = [[(r["token"], r["match_count"]) for r in table.to_pylist()]
            for table in [vocabulary.tokens_by_rank(pa.ipc.open_file(ranked.path).read_all()),
                          *(pa.ipc.open_file(run.path).read_all() for run in (token_rows, unigram_rows, reserved))]]
    assert rows == [[("b", 7), ("h", 6), ("c", 5), ("f", 4), ("a", 3), ("i", 1)],
                    [("a", None), ("b", None), ("c", None), ("d", None), ("e", None), ("f", 4), ("g", None)],
                    [("h", 6), ("i", 1)],
                    [("_START_", 2)]]
    assert tokens.flush() == [], "each record given once"


def test_unigram_rows_out_of_token_order_are_ranked_apart_then_merged(tmp_path):
    """Unigram tables are ranked a sequence in token order at a time (ties keep that order); a table that does
    not follow the one before ends the sequence, whose ranked rows wait in the buffer, and the buffer's
    sequences are merged into one ranked run file when it spills."""
    tokens = vocabulary.TokenRuns(str(tmp_path), 1 << 20)
    assert tokens.add([_ngrams(("m", 1), ("n", 2))], "file m") == []
    assert tokens.add([_ngrams(("a", 2), ("b", 1))], "file a") == []  # a file from "a"
    assert tokens.ranked.buffered and tokens.sequence_bytes  # "m n" ranked, "a b" held
    (ranked,) = [run for run in tokens.flush() if run.kind == "ranked"]
    rows = vocabulary.tokens_by_rank(pa.ipc.open_file(ranked.path).read_all())
    assert list(zip(rows["token"].to_pylist(), rows["match_count"].to_pylist())) == [
        ("a", 2), ("n", 2), ("b", 1), ("m", 1)]
