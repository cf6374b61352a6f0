"""The native column functions (native/src/order.rs, masks.rs, groups.rs) against independent references: Arrow's
stable sort, plain Python over the bits, NumPy's reduceat."""

import bisect
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ngramflow.schemas import NGRAMS, YEAR_MIN
from ngramflow.transforms import columnar, native
from ngramflow.transforms.checked import CountOverflow
from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.runfiles import rows_below
from ngramflow.transforms.total import by_order, keep_frequent, ngram_tables, to_ngram_table

#: Keys past a sort's head of 16 bytes (order.rs): ones that tie there, and one the others' prefix.
LONG = ["of the united states", "of the united states of", "of the united kingdom", "of the united state"]
TOKENS = ["", "a", "ab", "b", "b a", "ba", "c", "é", "ü b", "zz", "x y z", "a\u0301", *LONG]


def _random_keys(rng: random.Random) -> pa.Array:
    """Keys in a few sorted pieces, or in no order, sometimes a slice of a larger array."""
    words = [rng.choice(TOKENS) for _ in range(rng.randrange(0, 80))]
    if rng.random() < 0.5:
        cuts = sorted(rng.sample(range(len(words) + 1), min(len(words) + 1, rng.randrange(1, 5))))
        words = [w for start, end in zip([0, *cuts], [*cuts, len(words)]) for w in sorted(words[start:end])]
    keys = pa.array(words, pa.string())
    return keys.slice(2, len(keys) - 3) if len(keys) > 5 and rng.random() < 0.3 else keys


@pytest.mark.parametrize("seed", range(5))
def test_merge_order_is_a_stable_sort_and_its_groups(seed):
    rng = random.Random(seed)
    for _ in range(200):
        keys = _random_keys(rng)
        order, starts = native.merge_order(keys)
        expected = pc.sort_indices(keys).to_numpy()  # stable
        got = np.arange(len(keys)) if order is None else order
        assert got.tolist() == expected.tolist()
        assert (order is None) == (expected.tolist() == list(range(len(keys))))
        in_order = keys.take(pa.array(got, pa.int64())).to_pylist()
        assert starts.tolist() == [i for i, k in enumerate(in_order) if i == 0 or k != in_order[i - 1]]
        alone = native.rows_in_order(keys)  # the order without the groups: the same
        assert (alone is None) == (order is None) and (order is None or alone.tolist() == order.tolist())


@pytest.mark.parametrize("seed", range(3))
def test_merged_tokens_are_each_token_once_with_the_counts_of_its_largest_match(seed):
    """native.merge_tokens against Python: each group of merge_order's keeps its token and the counts of its
    row of largest match count, the first such row in the order (nulls as -1), whatever the keys' order."""
    rng = random.Random(seed)
    for _ in range(200):
        keys = _random_keys(rng)
        matches = np.array([rng.choice([-1, 0, 3, 3, 7]) for _ in range(len(keys))], np.int64)
        volumes = np.array([rng.randrange(-1, 9) for _ in range(len(keys))], np.int64)
        order, starts = native.merge_order(keys)
        tokens, merged_matches, merged_volumes = native.merge_tokens(keys, matches, volumes, order, starts)
        rows = np.arange(len(keys)) if order is None else order
        groups = np.split(rows, starts[1:]) if len(keys) else []
        best = [group[int(np.argmax(matches[group]))] for group in groups]  # argmax: the first of ties
        assert tokens.to_pylist() == [keys[int(r)].as_py() for r in best]
        assert merged_matches.tolist() == matches[best].tolist()
        assert merged_volumes.tolist() == volumes[best].tolist()


@pytest.mark.parametrize("kind", [pa.string(), pa.binary()])
def test_rows_below_a_key_are_those_bisect_counts(kind):
    """runfiles.rows_below (native) against Python's bisect over the same sorted keys, str or bytes, in slices
    and in chunks: keys that are others' prefixes, that tie past 16 bytes, and keys found and not found."""
    rng = random.Random(4)
    probes = [*TOKENS, "0", "a a", "of the united", "of the united states of america", "\uffff"]
    for _ in range(100):
        words = sorted(rng.choice(TOKENS) for _ in range(rng.randrange(0, 40)))
        values = [w if kind == pa.string() else w.encode() for w in words]
        keys = pa.array(values, kind)
        half = len(keys) // 2
        for sample, listed in [(keys, values), (keys.slice(1, half), values[1:1 + half]),
                               (pa.chunked_array([keys.slice(0, half), keys.slice(half)], kind), values)]:
            for probe in probes:
                key = probe if kind == pa.string() else probe.encode()
                assert rows_below(sample, key) == bisect.bisect_left(listed, key)
                assert rows_below(sample, key, through=True) == bisect.bisect_right(listed, key)


@pytest.mark.parametrize("kind", [pa.string(), pa.binary()])
def test_a_chunked_column_made_whole_is_its_rows_in_one_array(kind):
    rng = random.Random(5)
    words = [rng.choice(TOKENS) for _ in range(900)]
    array = pa.array(words if kind == pa.string() else [w.encode() for w in words], kind)
    empty = pa.array([], kind)
    for chunks in ([array.slice(0, 10), array.slice(10, 0), array.slice(10, 500), array.slice(510)],
                   [array.slice(3, 7), empty, array.slice(800, 50)], [pa.array(["", ""], kind), array.slice(5, 1)]):
        column = pa.chunked_array(chunks, kind)
        for piece in (column, column.slice(2, len(column) - 4)):
            joined = columnar.whole(piece)
            joined.validate(full=True)
            assert joined.type == kind and joined.to_pylist() == piece.to_pylist()
    counts = pa.chunked_array([pa.array([1, 2, 3], pa.int64()).slice(1), pa.array([4, 5], pa.int64())])
    assert columnar.numpy(counts).tolist() == [2, 3, 4, 5]


def _python_stats(span: bytes) -> tuple[int, int, int]:
    """Of a span mask: its first byte is the index in the whole mask of the bytes after it."""
    base, mask = 8 * span[0], span[1:]
    bits = [base + b for b in range(8 * len(mask)) if mask[b // 8] >> (b % 8) & 1]
    return YEAR_MIN + bits[0], YEAR_MIN + bits[-1], len(bits)


def test_mask_stats_count_the_bits_of_every_mask():
    rng = np.random.default_rng(3)
    masks = ((rng.random((500, columnar.MASK_BYTES)) < 0.03)
             * rng.integers(1, 256, (500, columnar.MASK_BYTES))).astype(np.uint8)
    masks[:, 0] |= (np.arange(500) % 7 == 0).astype(np.uint8)  # the first year
    masks[:, -1] |= (np.arange(500) % 5 == 0).astype(np.uint8) << 7  # the last bit
    masks[masks.sum(axis=1) == 0, 40] = 1
    column = columnar.mask_array(masks).slice(9)
    first, last, count = columnar.mask_stats(column)
    assert list(zip(first.tolist(), last.tolist(), count.tolist())) == [
        _python_stats(m) for m in column.to_pylist()]


@pytest.mark.parametrize("joined", [0.0, 0.01, 0.5, 0.97])
def test_merged_groups_are_their_first_keys_sums_and_year_sets_as_numpy_reduces_them(joined):
    """merge_groups over masks in chunks, rows in their order and in another: each group's key, its counts
    summed and its year masks ORed (np.add / np.bitwise_or .reduceat)."""
    rng = np.random.default_rng(int(joined * 100))
    masks = ((rng.random((3000, columnar.MASK_BYTES)) < 0.1) * rng.integers(0, 256, (3000, columnar.MASK_BYTES))
             ).astype(np.uint8)
    masks[::97] = 0  # empty year sets among them
    starts = np.flatnonzero(np.concatenate(([True], rng.random(2999) >= joined)))
    group_of = np.cumsum(np.isin(np.arange(3000), starts)) - 1  # the group of each position of the order
    matches, volumes = rng.integers(0, 1 << 40, 3000), rng.integers(0, 1 << 40, 3000)
    column = columnar.mask_array(masks)
    chunked = pa.chunked_array([column.slice(0, 1000), column.slice(1000, 1), column.slice(1001)])
    for order in (None, rng.permutation(3000)):
        rows = np.arange(3000) if order is None else order
        keys = np.empty(3000, object)
        keys[rows] = [f"k{g:05d} \u00e9" for g in group_of]  # row rows[at] is in the group of position at
        ngrams, summed_m, summed_v, years = native.merge_groups(pa.array(keys, pa.string()), matches, volumes,
                                                                chunked, order, starts)
        assert ngrams.to_pylist() == [f"k{g:05d} \u00e9" for g in range(len(starts))]
        assert summed_m.tolist() == np.add.reduceat(matches[rows], starts).tolist()
        assert summed_v.tolist() == np.add.reduceat(volumes[rows], starts).tolist()
        assert years.to_pylist() == columnar.mask_array(np.bitwise_or.reduceat(masks[rows], starts, axis=0)).to_pylist()


@pytest.mark.parametrize("min_count", [1, 3])
@pytest.mark.parametrize("shuffled", [False, True])
def test_ngram_tables_are_the_merged_runs_made_into_rows_and_taken_apart_by_order(min_count, shuffled):
    """ngram_tables (native merge_ngrams: one pass) against the way of several: merge_runs, keep_frequent,
    to_ngram_table and by_order, on run tables of n-grams of several orders, in sorted pieces or shuffled, the
    same n-gram in several rows, in chunks."""
    rng = np.random.default_rng(min_count + 10 * shuffled)
    words = ["a", "b", "ab", "é", "the", "of the united states"]
    ngrams = [" ".join(rng.choice(words, rng.integers(1, 5))) for _ in range(4000)]
    masks = ((rng.random((4000, columnar.MASK_BYTES)) < 0.02) * rng.integers(0, 256, (4000, columnar.MASK_BYTES))
             ).astype(np.uint8)
    runs = pa.table({"ngram": pa.array(ngrams, pa.string()), "match": rng.integers(1, 4, 4000),
                     "volume": rng.integers(1, 3, 4000), "years": columnar.mask_array(masks)})
    if not shuffled:  # a few sorted pieces, as run files' heads are
        runs = pa.concat_tables(runs.slice(start, 1000).sort_by("ngram") for start in range(0, 4000, 1000))
    runs = pa.Table.from_batches(runs.to_batches(max_chunksize=700))
    expected = [rows for _, rows in by_order(to_ngram_table(keep_frequent(merge_runs(runs), min_count)))]
    got = ngram_tables(runs, min_count)
    assert [t.schema for t in got] == [NGRAMS] * len(got)
    assert [t.to_pylist() for t in got] == [t.to_pylist() for t in expected]
    assert len(got) > 2 and all(t.num_rows for t in got)  # several orders, none empty


def test_ngram_tables_name_the_n_gram_whose_sum_does_not_fit():
    big = np.iinfo(np.int64).max
    runs = pa.table({"ngram": ["a b", "a", "a b"], "match": [1, 1, 1], "volume": [big, 1, 1],
                     "years": columnar.mask_array(np.zeros((3, columnar.MASK_BYTES), np.uint8))})
    with pytest.raises(CountOverflow, match="volume_count of n-gram 'a b'"):
        ngram_tables(runs, 1)


def test_a_merged_sum_past_int64_gives_its_group_and_column():
    keys = pa.array(["a", "b", "b", "c", "c"])
    masks = columnar.mask_array(np.zeros((5, columnar.MASK_BYTES), np.uint8))
    big, ones, starts = np.iinfo(np.int64).max, np.ones(5, np.int64), np.array([0, 1, 3])
    assert native.merge_groups(keys, np.array([1, 1, 1, big, 1]), ones, masks, None, starts) == (2, "match")
    assert native.merge_groups(keys, ones, np.array([1, big, 1, 1, 1]), masks, None, starts) == (1, "volume")


@pytest.mark.parametrize("seed", range(3))
def test_distinct_tokens_are_every_token_once_in_byte_order_with_its_first_unigram_row(seed):
    rng = random.Random(seed)
    words = [t for t in TOKENS if t and " " not in t]
    for _ in range(100):
        ngrams = pa.array([" ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))
                           for _ in range(rng.randrange(0, 50))], pa.string())
        if len(ngrams) > 5 and rng.random() < 0.3:
            ngrams = ngrams.slice(2, len(ngrams) - 4)
        expected = sorted({t for n in ngrams.to_pylist() for t in n.split(" ")}, key=lambda t: t.encode())
        first_row = {}
        for row, ngram in enumerate(ngrams.to_pylist()):
            first_row.setdefault(ngram, row)
        # As one array, and as chunks (empty ones among them) whose rows count on from the chunk before.
        cuts = sorted(rng.randint(0, len(ngrams)) for _ in range(rng.randint(1, 3)))
        chunks = pa.chunked_array([ngrams.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, len(ngrams)])],
                                  pa.string())
        for strings in (ngrams, chunks):
            tokens, rows = native.distinct_tokens(strings)
            assert tokens.to_pylist() == expected
            assert rows.tolist() == [first_row.get(token, -1) for token in expected]


@pytest.mark.parametrize("cache_bytes", [64, 1 << 10, 1 << 20])
def test_distinct_tokens_leave_out_only_tokens_given_before(cache_bytes):
    """A worker's tables through one RecentTokens (64 bytes: one bucket, forgetting all the time): each table
    gives every unigram with its row, and every other token unless an earlier table of the worker gave it;
    so the tables give every token at least once, and tokens too long for the cache every time."""
    rng = random.Random(cache_bytes)
    words = [t for t in TOKENS if t and " " not in t] + ["x" * 23, "y" * 24, "long-" * 9]
    recent, given = native.RecentTokens(cache_bytes), set()
    for _ in range(300):
        ngrams = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) for _ in range(rng.randrange(0, 40))]
        tokens, rows = native.distinct_tokens(pa.array(ngrams, pa.string()), recent)
        tokens = tokens.to_pylist()
        assert tokens == sorted(set(tokens), key=lambda t: t.encode())
        unigrams = {n: row for row, n in reversed(list(enumerate(ngrams))) if " " not in n}
        assert {t: r for t, r in zip(tokens, rows.tolist()) if r >= 0} == unigrams
        in_table = {t for n in ngrams for t in n.split(" ")}
        assert set(tokens) <= in_table
        assert in_table - set(tokens) <= given, "a token left out that no earlier table gave"
        assert {t for t in in_table if len(t.encode()) > 23} <= set(tokens)
        given |= set(tokens)
