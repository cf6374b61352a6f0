"""The benchmark corpus's layouts (benchmarks/bench.py): the same rows, laid out as each layout says."""

import itertools
import os

from isal import igzip

from benchmarks.bench import UNIGRAM_LAYOUTS, UNIGRAMS, corpus, data_files, one_file_layout, shuffled_layout


def _lines(path: str) -> list[bytes]:
    with igzip.open(path, "rb") as fh:
        return fh.read().splitlines()


def test_the_shuffled_layout_holds_each_sorted_file_with_its_ngrams_out_of_order_and_their_rows_together(tmp_path):
    path = corpus(str(tmp_path), 20_000)
    shuffled_layout(path)
    names = [os.path.basename(f) for f in data_files(path, "2012-shuffled")]
    assert names == [os.path.basename(f) for f in data_files(path, "2012-sorted")] and names
    for name in names:
        ordered = _lines(os.path.join(path, "2012-sorted", name))
        shuffled = _lines(os.path.join(path, "2012-shuffled", name))
        assert sorted(shuffled) == sorted(ordered)
        keys = [line.split(b"\t", 1)[0] for line in shuffled]
        runs = [key for key, _ in itertools.groupby(keys)]
        assert len(runs) == len(set(keys)), "each n-gram's rows together"
        assert runs != sorted(runs), "n-grams out of order"
        for key, rows in itertools.groupby(shuffled, key=lambda line: line.split(b"\t", 1)[0]):
            years = [int(row.split(b"\t")[1]) for row in rows]
            assert years == sorted(years), key


def test_the_one_file_layout_is_the_merged_files_joined_into_one(tmp_path):
    """One gzip file of every merged file's members, in their order: the same lines, read as one file."""
    path = corpus(str(tmp_path), 20_000)
    one_file_layout(path)
    (one,) = data_files(path, "2012-one")
    merged = data_files(path, "2012-merged")
    assert len(merged) > 1
    assert _lines(one) == [line for part in merged for line in _lines(part)]
    made = os.stat(one).st_mtime_ns
    assert one_file_layout(path) == os.path.dirname(one) and os.stat(one).st_mtime_ns == made, "made once"


def test_the_1_gram_shaped_corpus_is_one_of_its_own_of_1_grams_alone(tmp_path):
    """make bench's 1-gram corpus: its own folder beside the benchmark corpus of the same rows, and in each of
    its layouts every n-gram one token."""
    path = corpus(str(tmp_path), 20_000, orders=UNIGRAMS)
    assert path != corpus(str(tmp_path), 20_000)
    for _, layout in UNIGRAM_LAYOUTS:
        files = data_files(path, layout)
        assert files
        keys = [line.split(b"\t", 1)[0] for f in files for line in _lines(f)]
        assert keys and not any(b" " in key for key in keys)
