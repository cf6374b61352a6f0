"""A large n-gram dataset for look-up benchmarks, written straight to Parquet.

    python -m benchmarks.lookup_dataset DIR [--ngrams 12000000] [--shards 32] [--seed 1] [--row-group-rows N]

An import of ~60M corpus rows would take hours on a small machine to produce
what look-ups need: many n-grams in the layout an import writes. So this
writes that layout directly, through the import's own writer
(transforms.sinks.write_named_table: its row-group size, zstd, the schema's
types): n-grams of orders 1-3 with per-year series, split into part files by
the import's stable shard hash and sorted by n-gram within each file, plus a
totalcounts.parquet and a manifest marking the dataset complete. The
n-grams are unique tuples of a syllable vocabulary drawn with a Zipf-like skew,
with heavy-tailed, noisy yearly counts.
"""

import argparse
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ngramflow import schemas
from ngramflow.pipeline.output import DatasetDir
from ngramflow.schemas import layout
from ngramflow.schemas.manifest import Manifest, OrderTotals
from ngramflow.transforms import columnar, sinks, sizing

VOCABULARY = 250_000
#: Share of the n-grams per order; all the vocabulary's 1-grams come first.
ORDER_SHARE = {2: 0.42, 3: 0.58}
FIRST_YEAR, LAST_YEAR = 1800, 2019
_CONSONANTS, _VOWELS = "bcdfghjklmnprstvwz", "aeiou"


def vocabulary(size: int) -> pa.Array:
    """Distinct words of 2, 3, then 4 consonant-vowel syllables (lengths differ, so no collisions)."""
    syllables = np.array([c + v for c in _CONSONANTS for v in _VOWELS], dtype=object)
    base = len(syllables)
    words, n_syllables = [], 2
    while len(words) < size:
        ids = np.arange(min(base ** n_syllables, size - len(words)))
        word = np.full(len(ids), "", dtype=object)
        for _ in range(n_syllables):
            word, ids = word + syllables[ids % base], ids // base
        words.extend(word.tolist())
        n_syllables += 1
    return pa.array(words, pa.string())


def unique_tuples(rng, order: int, count: int, vocab_size: int) -> np.ndarray:
    """``count`` distinct token-id tuples (rows of an int64 matrix), frequent tokens more likely."""
    codes = np.zeros(0, np.int64)
    while len(codes) < count:
        ids = (vocab_size * rng.random((2 * count, order)) ** 2.5).astype(np.int64)
        codes = np.unique(np.concatenate([codes, (ids * vocab_size ** np.arange(order)[::-1]).sum(axis=1)]))
    codes = rng.permutation(codes)[:count]
    return np.stack([codes // vocab_size ** k % vocab_size for k in range(order - 1, -1, -1)], axis=1)


def ngram_strings(words: pa.Array, tuples: np.ndarray) -> pa.Array:
    tokens = [words.take(pa.array(tuples[:, k])) for k in range(tuples.shape[1])]
    return pc.binary_join_element_wise(*tokens, " ") if len(tokens) > 1 else tokens[0]


def ngram_table(rng, ngrams: pa.Array, order: int) -> pa.Table:
    """Rows of schemas.NGRAMS_WITH_YEARS: noisy series over consecutive years, summing to the totals."""
    n = len(ngrams)
    lengths = np.minimum(1 + rng.geometric(1 / 8, n), LAST_YEAR - FIRST_YEAR + 1)
    first = FIRST_YEAR + (rng.random(n) * (LAST_YEAR - FIRST_YEAR + 2 - lengths)).astype(np.int64)
    per_year = np.ceil(40 / lengths).astype(np.int64) + (rng.pareto(1.2, n) * 20).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    row = np.repeat(np.arange(n), lengths)
    years = first[row] + np.arange(offsets[-1]) - offsets[:-1][row]
    matches = np.maximum(1, (per_year[row] * rng.gamma(2.0, 0.5, offsets[-1])).astype(np.int64))
    volumes = np.maximum(1, matches // 3)
    series = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.StructArray.from_arrays(
        [pa.array(years, pa.int16()), pa.array(matches), pa.array(volumes)],
        fields=list(schemas.YEAR_SERIES.value_type)))
    return pa.table({
        "ngram": ngrams, "order": pa.array(np.full(n, order, np.int8)),
        "match_count": pa.array(np.add.reduceat(matches, offsets[:-1])),
        "volume_count": pa.array(np.add.reduceat(volumes, offsets[:-1])),
        "first_year": pa.array(first, pa.int16()), "last_year": pa.array(first + lengths - 1, pa.int16()),
        "years": pa.array(lengths, pa.int16()), "year_series": series,
    })


def year_totals(table: pa.Table) -> np.ndarray:
    flat = pc.list_flatten(table["year_series"].combine_chunks())
    return np.bincount(columnar.numpy(flat.field("year")) - FIRST_YEAR,
                       weights=columnar.numpy(flat.field("match_count")), minlength=LAST_YEAR - FIRST_YEAR + 1)


def build(path: str, ngrams: int, shards: int, seed: int) -> dict:
    target = DatasetDir(path)
    with target.lock():
        target.prepare(overwrite=True, description="benchmarks.lookup_dataset")
        return target.publish(_write(target.build, path, ngrams, shards, seed).to_json())


def _write(out, path: str, ngrams: int, shards: int, seed: int) -> Manifest:
    """Write the dataset's files into OUT; returns its manifest."""
    rng = np.random.default_rng(seed)
    words = vocabulary(VOCABULARY)
    counts = {1: VOCABULARY, **{o: int((ngrams - VOCABULARY) * s) for o, s in ORDER_SHARE.items()}}
    totals, orders = np.zeros(LAST_YEAR - FIRST_YEAR + 1), {}
    for order, count in counts.items():
        tuples = np.arange(VOCABULARY)[:, None] if order == 1 else unique_tuples(rng, order, count, VOCABULARY)
        strings = ngram_strings(words, tuples)
        match_count = volume_count = 0
        shard = columnar.shard_of(strings, shards)
        for part in range(shards):
            table = ngram_table(rng, strings.filter(pa.array(shard == part)), order)
            table = table.take(pc.sort_indices(table, [("ngram", "ascending")]))
            sinks.write_named_table(out.path, layout.part(layout.ngrams_folder(order), part), table,
                                    schemas.NGRAMS_WITH_YEARS)
            match_count += pc.sum(table["match_count"]).as_py()
            volume_count += pc.sum(table["volume_count"]).as_py()
            if order == 1:
                totals += year_totals(table)
        orders[order] = OrderTotals(count, match_count, volume_count)
        print(f"order {order}: {count:,} n-grams", flush=True)
    out.write_parquet(layout.TOTALCOUNTS, pa.table({
        "year": pa.array(np.arange(FIRST_YEAR, LAST_YEAR + 1), pa.int16()),
        "match_count": pa.array(totals.astype(np.int64)), "page_count": pa.nulls(len(totals), pa.int64()),
        "volume_count": pa.array((totals // 3).astype(np.int64))}, schema=schemas.TOTALCOUNTS))
    out.ensure_parquet(layout.VOCABULARY, schemas.VOCABULARY)
    out.ensure_parquet(layout.REJECTS, schemas.REJECTS)
    return Manifest(
        command=f"python -m benchmarks.lookup_dataset {path} --ngrams {ngrams} --shards {shards} --seed {seed} "
                f"--row-group-rows {sizing.ROW_GROUP_ROWS}",
        options={"keep_years": True, "lowercase": False, "pos": "drop", "min_count": 40},
        orders=orders, totalcounts_years=len(totals), vocabulary_tokens=0,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lookup_dataset", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", metavar="DIR")
    parser.add_argument("--ngrams", type=int, default=12_000_000, help="n-grams over all orders")
    parser.add_argument("--shards", type=int, default=32, help="part files per order, as an import's shards")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--row-group-rows", type=int, default=sizing.ROW_GROUP_ROWS,
                        help="rows per Parquet row group, to measure other sizes than the writer's")
    args = parser.parse_args(argv)
    sizing.ROW_GROUP_ROWS = args.row_group_rows
    started = time.time()
    manifest = build(args.output, args.ngrams, args.shards, args.seed)
    print(f"{sum(o['ngrams'] for o in manifest['orders'].values()):,} n-grams, "
          f"{manifest['output_bytes'] / 1e9:.2f} GB in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
