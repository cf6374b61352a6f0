"""Totals in the input's own order (--merge input-order, transforms/sorted_input.py): the same dataset as the
merge through run files, part files whose spans are apart, and input that is not in order imported again."""

import gzip
import itertools
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.pvalue import TaggedOutput

from conftest import (NOT_TAGGED, SAMPLE, assert_same_rows, gz_files, import_ok, ngrams_of, reference_2012,
                      reference_2020, run_cli, vocabulary_of)
from ngramflow import schemas
from ngramflow.pipeline.graph import default_merge
from ngramflow.pipeline.options import ImportOptions
from ngramflow.transforms.native import prefix_stretches
from ngramflow.transforms.kernel import Collapsed, collapse_chunk
from ngramflow.transforms import sorted_input
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.sizing import RANGE_ROWS_VARIABLE, ROW_GROUP_ROWS, SORTED_INPUT_FILE_BYTES
from ngramflow.transforms.sorted_input import KEY_SPANS, InputNotSorted, SortedFile, _OrderSpans
from ngramflow.transforms.vocabulary import TokenRuns


def manifest_of(dataset) -> dict:
    with open(os.path.join(dataset, "_manifest.json")) as fh:
        return json.load(fh)


def assert_parts_apart(dataset) -> None:
    """Each order's part files: sorted, their spans as the manifest lists them, in order and apart."""
    for order, ranges in manifest_of(dataset)["ranges"].items():
        assert ranges, order
        for (_, _, last), (_, first, _) in zip(ranges, ranges[1:]):
            assert last.encode() < first.encode()
        for name, first, last in ranges:
            keys = pq.read_table(os.path.join(dataset, name), columns=["ngram"])["ngram"].to_pylist()
            assert keys == sorted(keys, key=str.encode) and (keys[0], keys[-1]) == (first, last)


def write_2012(path, lines) -> str:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(f"{line}\n" for line in lines)
    return str(path)


@pytest.mark.parametrize("fmt", ["2012", "2020"])
def test_input_order_gives_the_merges_dataset(big_corpus, tmp_path, fmt):
    files = big_corpus / fmt
    ours = import_ok(files, tmp_path / "input-order", "--merge", "input-order", "--workers", "2")
    runs = import_ok(files, tmp_path / "runs", "--merge", "runs", "--workers", "2")
    reference = (reference_2012 if fmt == "2012" else reference_2020)(gz_files(files)).filter(NOT_TAGGED)
    assert_same_rows(ngrams_of(ours), reference)
    assert vocabulary_of(ours) == vocabulary_of(runs)
    manifest = manifest_of(ours)
    assert manifest["aggregation"]["method"].startswith("each file totalled in its own order")
    assert "input_order_refused" not in manifest["aggregation"]
    assert manifest["orders"] == manifest_of(runs)["orders"]
    assert_parts_apart(ours)


def test_files_split_by_first_letter_in_either_case_are_cut_apart(tmp_path, capsys):
    """Google's 2012 files: "A..." and "a..." share a file that "B..." lies between, and the punctuation
    file's n-grams lie on both sides of the digits' and letters'."""
    files = os.path.join(SAMPLE, "2012")
    ours = import_ok(files, tmp_path / "out", "--merge", "input-order")
    assert "input_order_refused" not in manifest_of(ours)["aggregation"]
    assert_same_rows(ngrams_of(ours), reference_2012(gz_files(files), where=NOT_TAGGED))
    assert_parts_apart(ours)
    # Look-ups open the one part file the manifest's ranges name: they find every n-gram.
    runs = import_ok(files, tmp_path / "runs", "--merge", "runs")
    wanted = [row[0] for row in ngrams_of(runs)[::97]]
    answers = []
    for dataset in (ours, runs):
        assert run_cli("query", dataset, "count", *wanted) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1] and all(w in answers[0] for w in wanted)


def test_a_piece_is_cut_across_its_row_groups(tmp_path):
    """Each file holds two stretches of n-grams of one class of first bytes (prefix_class), more than a row
    group of each, that the other file's lie between: only the spans tell where to cut its piece."""
    files = []
    for name, firsts in (("x1", "éü"), ("x2", "ñ")):
        lines = [f"{first}{i:06d}\t2000\t{i % 7 + 1}\t1" for first in firsts for i in range(ROW_GROUP_ROWS + 5000)]
        files.append(write_2012(tmp_path / f"{name}.gz", lines))
    ours = import_ok(files, tmp_path / "out", "--merge", "input-order")
    assert "input_order_refused" not in manifest_of(ours)["aggregation"]
    assert_same_rows(ngrams_of(ours), reference_2012(files))
    assert_parts_apart(ours)


def test_export_files_pieces_are_laid_out_whole(tmp_path, monkeypatch):
    """Google's 2012 files, each of its letter's n-grams in either case, of the digits' or of punctuation on
    both sides of them: the letters' pieces are cut where the class of their first bytes changes as they are
    written, so that none is cut and written again when they are laid out, but punctuation's."""
    monkeypatch.setenv(RANGE_ROWS_VARIABLE, "1000")  # pieces and part files of 1000 rows: 125 and more not small
    words = {"a": ["A", "Ab", "a", "ab"], "b": ["B", "Ba", "b", "ba"], "1": ["1"],
             "punctuation": ["!", "[", "{"]}
    files = [write_2012(tmp_path / f"googlebooks-eng-all-1gram-20120701-{name}.gz",
                        [f"{first}{i:03d}\t2000\t{i % 5 + 1}\t1" for first in firsts for i in range(200)])
             for name, firsts in words.items()]
    laid_out, write_part = [], sorted_input._write_part

    def recorded(*args, **kwargs) -> bool:  # whether each part file was a piece renamed
        laid_out.append(renamed := write_part(*args, **kwargs))
        return renamed

    monkeypatch.setattr(sorted_input, "_write_part", recorded)
    ours = import_ok(files, tmp_path / "out", "--merge", "input-order")
    assert_same_rows(ngrams_of(ours), reference_2012(files))
    assert_parts_apart(ours)
    # a piece of each letter in either case ("A" and "Ab", ...), read as one table, and the digit's, renamed;
    # three cut from punctuation's
    assert sorted(laid_out) == [False] * 3 + [True] * 5


def pieces_of(root, outputs) -> list[list[str]]:
    """The n-grams of each piece a SortedFile wrote into ROOT, in the order written."""
    return [pq.read_table(root / piece["file"])["ngram"].to_pylist() for piece in outputs if isinstance(piece, dict)]


def lines(*ngrams) -> str:
    return "".join(f"{ngram}\t2000\t1\t1\n" for ngram in ngrams)


@pytest.mark.parametrize("chunks, pieces", [
    # 1-grams: the first byte's class; a run cut by a chunk boundary, and a new class from a table's first row
    ([lines("A'x", "Apple"), lines("Apple", "Azure"), lines("apple", "azure")],
     [["A'x", "Apple", "Azure"], ["apple", "azure"]]),
    # a new class at the held row, and the classes of the byte after the first character of longer n-grams
    ([lines("A b", "AB c"), lines("Ab c", "Ab d", "aB c")], [["A b"], ["AB c"], ["Ab c", "Ab d"], ["aB c"]]),
    # not all of one letter: no cut, from the first n-gram of another on
    ([lines("A b", "A c"), lines("B c", "b c", "c d")], [["A b", "A c", "B c", "b c", "c d"]]),
    ([lines("! x", "5 x", "A b", "a c")], [["! x", "5 x", "A b", "a c"]]),
])
def test_a_piece_is_cut_where_the_class_of_its_first_bytes_changes(tmp_path, chunks, pieces):
    """Each stretch of one class of first bytes (sorted_input.prefix_class) gets pieces of its own while the
    file's n-grams all begin with one letter: a 2012 file's n-grams of its letters in either case, which other
    files' n-grams lie between."""
    sorted_file = sorted_file_in(tmp_path)
    outputs = [output for chunk in chunks for output in sorted_file.add(chunk_of(chunk))] + [*sorted_file.finish()]
    assert pieces_of(tmp_path, outputs) == pieces


def test_files_apart_by_character_though_not_by_byte(tmp_path):
    """"“", "†" and "…" share their first two bytes; a file of the first and last and one of the second are
    apart by their first characters, and the first file is cut where the second lies between."""
    quotes = write_2012(tmp_path / "googlebooks-eng-all-1gram-20120701-punctuation.gz",
                        ["“a\t2000\t1\t1", "…a\t2000\t2\t1"])
    dagger = write_2012(tmp_path / "googlebooks-eng-all-1gram-20120701-other.gz", ["†a\t2000\t3\t1"])
    ours = import_ok([quotes, dagger], tmp_path / "out", "--merge", "input-order")
    assert "input_order_refused" not in manifest_of(ours)["aggregation"]
    assert ngrams_of(ours, "ngram, match_count") == [("“a", 1), ("†a", 3), ("…a", 2)]
    assert_parts_apart(ours)


def test_prefix_stretches_are_ordered_and_end_where_the_first_character_or_the_byte_after_it_changes():
    words = sorted(["a", "a b", "ab", "abc", "é", "éa", "éb", "“a", "†a", "…a", "中", "中文x", "中文y", "中x", "𝄞x"],
                   key=str.encode)
    starts, prefixes = prefix_stretches(pa.array(words).slice(1))  # a slice: its offsets do not start at 0
    assert prefixes.tolist() == sorted(set(prefixes.tolist()))
    stretch = np.searchsorted(starts, np.arange(len(words) - 1), side="right") - 1
    for (a, sa), (b, sb) in itertools.combinations(zip(words[1:], stretch), 2):
        prefix = len(a[0].encode()) + 1
        assert (sa == sb) == (a.encode()[:prefix] == b.encode()[:prefix]), (a, b)


def test_files_sharing_an_ngram_are_totalled_by_the_merge(big_corpus, tmp_path):
    source = max(gz_files(big_corpus / "2012"), key=os.path.getsize)
    with gzip.open(source, "rt", encoding="utf-8") as fh:
        head = [line.rstrip("\n") for line in itertools.islice(fh, 5000)]
    shared = write_2012(tmp_path / "another-file.gz", head)  # its n-grams are the first ones of SOURCE
    ours = import_ok([source, shared], tmp_path / "out", "--merge", "input-order")
    refused = manifest_of(ours)["aggregation"]["input_order_refused"]
    assert "another-file.gz" in refused and os.path.basename(source) in refused
    assert manifest_of(ours)["aggregation"]["method"] == "sorted runs spilled to disk"
    assert_same_rows(ngrams_of(ours), reference_2012([source, shared], where=NOT_TAGGED))


def test_a_file_out_of_order_from_its_first_lines_is_totalled_by_the_merge_from_the_start(tmp_path, capsys):
    lines = ["b\t2000\t1\t1", "a\t2000\t2\t1", "b\t2001\t3\t1"]
    path = write_2012(tmp_path / "unsorted.gz", lines)
    ours = import_ok(path, tmp_path / "out", "--merge", "input-order")
    err = capsys.readouterr().err
    assert "unsorted.gz: 'a' follows 'b'; totalling through sorted run files" in err and "again" not in err
    assert "unsorted.gz" in manifest_of(ours)["aggregation"]["input_order_refused"]
    assert ngrams_of(ours, "ngram, match_count, years") == [("a", 2, 1), ("b", 4, 2)]


def test_a_file_out_of_order_further_on_is_imported_again_by_the_merge(tmp_path, capsys, monkeypatch):
    # Its first line alone is looked at before the import: "b" after "c" is met by the read stage.
    monkeypatch.setattr(sorted_input, "ORDER_SAMPLE_BYTES", len("a\t2000\t1\t1\n"))
    lines = ["a\t2000\t1\t1", "c\t2000\t2\t1", "b\t2001\t3\t1"]
    path = write_2012(tmp_path / "unsorted.gz", lines)
    ours = import_ok(path, tmp_path / "out", "--merge", "input-order")
    assert "unsorted.gz: 'b' follows 'c'; importing again through sorted run files" in capsys.readouterr().err
    assert "unsorted.gz" in manifest_of(ours)["aggregation"]["input_order_refused"]
    assert ngrams_of(ours, "ngram, match_count, years") == [("a", 1, 1), ("b", 3, 1), ("c", 2, 1)]


def test_a_file_of_several_orders_keeps_each_in_order(tmp_path):
    """Google's files of one order each, concatenated: the orders' n-grams interleave, each in order."""
    lines = ["a b\t2000\t1\t1", "b c\t2000\t2\t1", "a\t2000\t5\t2", "a\t2001\t1\t1", "c\t2000\t7\t3"]
    path = write_2012(tmp_path / "orders.gz", lines)
    ours = import_ok(path, tmp_path / "out", "--merge", "input-order")
    assert "input_order_refused" not in manifest_of(ours)["aggregation"]
    assert_same_rows(ngrams_of(ours), reference_2012([path]))
    assert_parts_apart(ours)


def chunk_of(text: str) -> Collapsed:
    return collapse_chunk(text.encode(), "2012", "test.gz", 1, RowPolicy(), False)


def sorted_file_in(tmp_path) -> SortedFile:
    os.makedirs(tmp_path / "tokens", exist_ok=True)
    tokens = TokenRuns(str(tmp_path / "tokens"), 1 << 20)
    return SortedFile("test.gz", 1, str(tmp_path), schemas.ngrams_schema(False), 1000, tokens)


def rows_written(tmp_path, *chunks) -> list[dict]:
    """The n-gram, match count and years of the rows a SortedFile writes of CHUNKS (one piece)."""
    sorted_file = sorted_file_in(tmp_path)
    outputs = [output for chunk in chunks for output in sorted_file.add(chunk_of(chunk))] + [*sorted_file.finish()]
    (piece,) = [o for o in outputs if isinstance(o, dict)]
    return pq.read_table(tmp_path / piece["file"]).select(["ngram", "match_count", "years"]).to_pylist()


def test_a_run_cut_by_a_chunk_boundary_is_joined(tmp_path):
    rows = rows_written(tmp_path, "a\t2000\t1\t1\nb\t2000\t2\t1\n", "b\t2001\t3\t1\nc\t2000\t4\t1\n")
    assert rows == [{"ngram": "a", "match_count": 1, "years": 1}, {"ngram": "b", "match_count": 5, "years": 2},
                    {"ngram": "c", "match_count": 4, "years": 1}]


def test_a_run_cut_by_two_chunk_boundaries_is_joined(tmp_path):
    """A table that holds nothing but the rest of the run held from the table before: held on for the next."""
    rows = rows_written(tmp_path, "a\t2000\t1\t1\nb\t2000\t2\t1\n", "b\t2001\t3\t1\n",
                        "b\t2002\t4\t1\nc\t2000\t4\t1\n")
    assert rows == [{"ngram": "a", "match_count": 1, "years": 1}, {"ngram": "b", "match_count": 9, "years": 3},
                    {"ngram": "c", "match_count": 4, "years": 1}]


def test_a_table_before_the_last_is_refused(tmp_path):
    sorted_file = sorted_file_in(tmp_path)
    list(sorted_file.add(chunk_of("b\t2000\t1\t1\nc\t2000\t2\t1\n")))
    with pytest.raises(InputNotSorted, match="test.gz: 'a' follows 'c'"):
        list(sorted_file.add(chunk_of("a\t2000\t1\t1\n")))


def test_a_table_continuing_the_held_run_is_checked_past_it(tmp_path):
    """The held run joined with the next table's first row: the row after it must still come after it."""
    sorted_file = sorted_file_in(tmp_path)
    list(sorted_file.add(chunk_of("a\t2000\t1\t1\nb\t2000\t2\t1\n")))
    with pytest.raises(InputNotSorted, match="test.gz: 'a' follows 'b'"):
        list(sorted_file.add(chunk_of("b\t2001\t3\t1\na\t2001\t1\t1\n")))


def test_a_files_spans_are_each_prefixs_first_and_last_key_however_its_stretches_fall(tmp_path, monkeypatch):
    """Stretches of a prefix continued across tables, and folded every few stretches: one span a prefix and
    order, from its first key to its last."""
    monkeypatch.setattr(_OrderSpans, "FOLD_AT", 3)
    keys = sorted(["aa", "ab", "ab c", "ac", "b", "ba", "ba x", "baa", "bab", "bac", "bad", "bae", "bb",
                   "é", "éa", "éa b", "éb", "中文", "中x"], key=str.encode)
    chunks = ["".join(f"{key}\t2000\t1\t1\n" for key in keys[at:at + 3]) for at in range(0, len(keys), 3)]
    sorted_file = sorted_file_in(tmp_path)
    outputs = [output for chunk in chunks for output in sorted_file.add(chunk_of(chunk))] + [*sorted_file.finish()]
    ((_, spans),) = [o.value for o in outputs if isinstance(o, TaggedOutput) and o.tag == KEY_SPANS]
    want = {}
    for key in keys:
        prefix = key.encode()[:len(key[0].encode()) + 1]
        want.setdefault((schemas.order_of(key), prefix), []).append(key)
    assert sorted((r["order"], r["first"], r["last"]) for r in spans.to_pylist()) == sorted(
        (order, group[0], group[-1]) for (order, _), group in want.items())


def test_spans_of_many_prefixes_are_folded_a_few_times_not_at_every_table(monkeypatch):
    """A file of more prefixes than FOLD_AT: each fold waits for twice the spans the last one left."""
    monkeypatch.setattr(_OrderSpans, "FOLD_AT", 4)
    spans, folds = _OrderSpans(), []
    folded = spans.folded
    monkeypatch.setattr(spans, "folded", lambda: folds.append(spans.held) or folded())
    keys = [f"{first}{second}" for first in "abcdefgh" for second in "abcdefghijklmnopqrstuvwxyzABCDEF"]
    for at in range(0, len(keys), 4):  # a table of 4 prefixes of their own
        table = pa.array(keys[at:at + 4])
        starts, prefixes = prefix_stretches(table)
        spans.add(prefixes, table.take(starts), table.take(starts))
    assert len(folds) <= 7 and folds[-1] >= 128
    _, firsts, lasts = spans.folded()
    assert firsts.to_pylist() == keys and lasts.to_pylist() == keys


def test_a_chunk_is_checked_order_by_order(tmp_path):
    sorted_file = sorted_file_in(tmp_path)
    mixed = chunk_of("a\t2000\t1\t1\na b\t2000\t1\t1\nb\t2000\t1\t1\na c\t2000\t1\t1\n")
    assert not mixed.ascending  # each order ascends: the file is in order, the kernel's flag alone cannot say
    list(sorted_file.add(mixed))
    with pytest.raises(InputNotSorted, match="test.gz: 'a a' follows 'a c'"):
        list(sorted_file.add(chunk_of("a a\t2000\t1\t1\n")))
    with pytest.raises(InputNotSorted, match="test.gz: 'b' follows 'c'"):
        list(sorted_file_in(tmp_path).add(chunk_of("a\t2000\t1\t1\nc\t2000\t1\t1\nb\t2000\t1\t1\n")))


def test_auto_totals_large_export_files_in_their_order():
    names = ["/c/googlebooks-eng-us-all-2gram-20120701-a_.gz", "/c/eng/3-00012-of-06881.gz"]
    large = [(name, SORTED_INPUT_FILE_BYTES) for name in names]
    small = [(name, SORTED_INPUT_FILE_BYTES // 2) for name in names]
    options = ImportOptions(inputs=["x"], output="o")
    assert default_merge(options, large) == "input-order"
    assert default_merge(options, small) == "runs"
    assert default_merge(options, [*large, ("/c/part-00.gz", SORTED_INPUT_FILE_BYTES)]) == "runs"
    assert default_merge(ImportOptions(inputs=["x"], output="o", lowercase=True), large) == "runs"
    assert default_merge(ImportOptions(inputs=["x"], output="o", runner="flink"), large) == "runs"


def test_input_order_with_lowercase_is_a_one_line_error(tmp_path, capsys):
    code = run_cli("import", os.path.join(SAMPLE, "2012"), "--output", tmp_path / "out", "--merge", "input-order",
                   "--lowercase")
    err = capsys.readouterr().err
    assert code == 2 and "--merge input-order needs the embedded runner" in err and "Traceback" not in err
