"""Files read in slices (checkpointed Flink imports) give exactly what a whole-file read gives.

A slice holds the lines that start in its range of decompressed bytes; a slice
read by a reader continuing from the previous one and one read by a fresh
reader that skips there must be the same lines with the same numbers.
"""

import gzip
import itertools
import os
import random
import time

import pyarrow as pa
import pytest

from conftest import copied
from ngramflow.transforms import lines as reading, read
from ngramflow.transforms.lines import LINE_ROOM, LineReader, ReadSettings, collapsed_pieces
from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.sizing import EXPANSION
from ngramflow.transforms.units import pack_files

LINES = [b"alpha\t1990\t3\t1", b"alpha\t1991\t2\t1", b"beta gamma\t2000\t7\t2", b"not a row",
         b"delta\t2001\t1\t1" + b"x" * 300, b"epsilon\t1950\t4\t3", b"zeta\t1960\t5\t2"]


def gz(path, text: bytes) -> str:
    with gzip.open(path, "wb") as fh:
        fh.write(text)
    return str(path)


def pieces(reader, start, end):
    for _ in reader.lines_before(start):
        pass
    return copied(reader.lines_before(end))


def flat(found) -> list[tuple[int, bytes]]:
    """(line number, line) of every line in the pieces."""
    lines = []
    for first, count, data in found:
        parts = data.split(b"\n")
        parts = parts[:-1] if data.endswith(b"\n") else parts
        assert len(parts) == count
        lines += [(first + i, part) for i, part in enumerate(parts)]
    return lines


@pytest.mark.parametrize("trailing_newline", [True, False])
@pytest.mark.parametrize("slice_bytes", [1, 15, 16, 17, 40, 333, 10_000])
def test_slices_hold_each_line_once_fresh_or_continued(tmp_path, slice_bytes, trailing_newline):
    text = b"\n".join(LINES * 30) + (b"\n" if trailing_newline else b"")
    path = gz(tmp_path / "f.gz", text)
    whole = flat(copied(LineReader(path, "2012").lines_before(None)))
    assert [line for _, line in whole] == (LINES * 30) and [n for n, _ in whole] == list(range(1, 211))

    slices = -(-len(text) // slice_bytes)
    fresh, continued, reader = [], [], LineReader(path, "2012")
    for k in range(slices):
        end = None if k == slices - 1 else (k + 1) * slice_bytes
        got = flat(pieces(LineReader(path, "2012"), k * slice_bytes, end))
        starts = [sum(len(line) + 1 for _, line in whole[:n - 1]) for n, _ in got]
        assert all(k * slice_bytes <= s and (end is None or s < end) for s in starts), "a line in the wrong slice"
        fresh += got
        continued += flat(pieces(reader, k * slice_bytes, end))
    assert fresh == whole and continued == whole


def test_lines_longer_than_the_buffer_are_read_whole(tmp_path):
    """The reader's buffer holds CHUNK_BYTES more than its unread text: a line longer than that grows it, and
    every piece is still whole lines, numbered, in order, fresh or continued across slices."""
    long_line = b"w" * (2 * reading.CHUNK_BYTES + 5) + b"\t1990\t1\t1"
    lines = LINES[:3] + [long_line] + LINES[3:] + [long_line]
    text = b"\n".join(lines) + b"\n"
    path = gz(tmp_path / "long.gz", text)
    whole = flat(copied(LineReader(path, "2012").lines_before(None)))
    assert whole == list(enumerate(lines, 1))
    cut = len(text) // 2
    reader = LineReader(path, "2012")
    assert flat(pieces(reader, 0, cut)) + flat(pieces(reader, cut, None)) == whole


def test_a_slice_unit_reads_like_the_whole_file(tmp_path):
    """Run tables, rejects (with their line numbers) and merged statistics, through ReadNgramFile itself."""
    rng = random.Random(1)
    lines = [f"w{rng.randrange(500)} w{rng.randrange(50)}\t{rng.randrange(1800, 2000)}\t{rng.randrange(1, 10**6)}"
             f"\t{rng.randrange(1, 100)}".encode() for _ in range(12_000)]
    lines[::6] = [b"not a row"] * 2000
    text = b"\n".join(lines) + b"\n"
    path = gz(tmp_path / "g.gz", text)
    size = os.path.getsize(path)

    def read_units(settings, units):
        fn = read.ReadNgramFile(settings)
        fn.setup()
        tables, rejects, stats = [], [], []
        for unit in units:
            for out in fn.process(unit):
                if not isinstance(out, read.beam.pvalue.TaggedOutput):
                    tables.append(out)
                elif out.tag == fn.REJECTS:
                    rejects.append(out.value[1])
                else:
                    stats += out.value[1]
        runs = merge_runs(pa.concat_tables(tables)).sort_by("ngram")
        return runs, pa.concat_tables(rejects).sort_by("line"), read.merge_file_stats(stats)

    whole = read_units(ReadSettings(), pack_files([(path, size)], 1 << 30))
    slice_bytes = size * EXPANSION // 7
    units = pack_files([(path, size)], 1 << 30, slice_bytes)
    assert len(units) > 1 and all(len(u) == 1 for u in units)
    sliced = read_units(ReadSettings(slice_bytes=slice_bytes), units)
    # Out of order, each slice starts a fresh reader (what a restore does).
    shuffled = read_units(ReadSettings(slice_bytes=slice_bytes), units[::-1])
    assert whole[2][0]["rows_read"] == 12_000 and whole[2][0]["rows_rejected"] == 2000
    for result in (sliced, shuffled):
        assert result[0].equals(whole[0]) and result[1].equals(whole[1]) and result[2] == whole[2]


def test_pack_files_cuts_only_large_files_and_only_when_asked():
    files = [("/a", 100), ("/b", 10_000), ("/c", 50)]
    assert pack_files(files, 1 << 20) == [[("/a", 100, 0, 1), ("/b", 10_000, 0, 1), ("/c", 50, 0, 1)]]
    units = pack_files(files, 1 << 20, slice_bytes=10_000)
    expected_slices = -(-10_000 * EXPANSION // 10_000)
    assert units == [[("/a", 100, 0, 1)]] + [[("/b", 10_000, k, expected_slices)] for k in range(expected_slices)] \
        + [[("/c", 50, 0, 1)]]


def test_a_piece_stays_valid_until_the_second_after_it(tmp_path, monkeypatch):
    """Blocks are decompressed ahead into buffers the reader reuses: a piece is parsed while the next is read,
    so it must not change until the second piece after it is asked for, with two readers sharing the
    threads and buffers, through short and long lines (longer than the room before a block)."""
    monkeypatch.setattr(reading, "CHUNK_BYTES", 4096)
    rng = random.Random(3)

    def text(seed_lines: int) -> bytes:
        lines = [b"w%d\t1990\t%d\t1" % (i, rng.randrange(10**6)) + b"x" * rng.choice([0, 50, 3000, LINE_ROOM + 7])
                 for i in range(seed_lines)]
        return b"\n".join(lines) + b"\n"

    texts = [text(400), text(300)]
    readers = [LineReader(gz(tmp_path / f"{i}.gz", t), "2012").lines_before(None) for i, t in enumerate(texts)]
    last = [None, None]  # per reader: the piece handed out last, and its bytes then
    read_back = [[], []]
    while readers[0] or readers[1]:
        for i, pieces in enumerate(readers):
            piece = pieces and next(pieces, None)
            if piece is None:
                readers[i] = None
                continue
            if last[i]:
                view, data = last[i]
                assert bytes(view) == data, "a piece changed when the one after it was asked for"
            last[i] = piece[2], bytes(piece[2])
            read_back[i].append(last[i][1])
    assert [b"".join(pieces) for pieces in read_back] == texts


def test_a_reader_stopped_early_waits_for_the_piece_being_collapsed(tmp_path, monkeypatch):
    """The piece after the one taken is collapsing on another thread, reading the reader's buffer: closing
    the pieces (as an error in the caller does) must wait for it, before the reader gives its buffers back."""
    monkeypatch.setattr(reading, "CHUNK_BYTES", 4096)
    running, started, collapse = [], itertools.count(), reading.collapse_natively

    def slow_collapse(*args):
        piece = next(started)
        running.append(piece)
        time.sleep(0 if piece == 0 else 0.5)  # each piece after the first takes its time
        try:
            return collapse(*args)
        finally:
            running.remove(piece)

    monkeypatch.setattr(reading, "collapse_natively", slow_collapse)
    text = b"".join(b"w%d\t1990\t3\t1\n" % i for i in range(5000))
    reader = LineReader(gz(tmp_path / "f.gz", text), "2012")
    pieces = collapsed_pieces(reader, None, ReadSettings())
    first_line, lines, collapsed = next(pieces)
    assert first_line == 1 and collapsed.runs.num_rows == lines
    started_by = time.monotonic() + 10  # the next piece was handed to a thread of _AHEAD: it starts collapsing
    while not running and time.monotonic() < started_by:
        time.sleep(0.01)
    assert running
    pieces.close()
    assert not running
    reader.close()


def test_the_lines_the_kernel_counts_number_the_rejects_after_them(tmp_path, monkeypatch):
    """The kernel counts the lines of the pieces it reads (no pass of their own): a malformed line after many
    such pieces, and after one read line by line, is named by its number in the file."""
    monkeypatch.setattr(reading, "CHUNK_BYTES", 4096)
    lines = [b"w%d\t1990\t3\t1" % i for i in range(5000)]
    bad = [1234, 1240, 4321, 4999]
    for i in bad:
        lines[i] = b"bad line %d" % i
    path = gz(tmp_path / "f.gz", b"\n".join(lines))  # its last line without a newline, and malformed
    fn = read.ReadNgramFile(ReadSettings())
    fn.setup()
    rejects, stats = [], []
    for out in fn.process(pack_files([(path, os.path.getsize(path))], 1 << 30)[0]):
        if isinstance(out, read.beam.pvalue.TaggedOutput) and out.tag == fn.REJECTS:
            rejects.append(out.value[1])
        elif isinstance(out, read.beam.pvalue.TaggedOutput):
            stats += out.value[1]
    found = pa.concat_tables(rejects).sort_by("line")
    assert found["line"].to_pylist() == [i + 1 for i in bad]
    assert found["raw"].to_pylist() == [lines[i] for i in bad]
    assert stats[0]["rows_read"] == 5000 and stats[0]["rows_rejected"] == len(bad)
