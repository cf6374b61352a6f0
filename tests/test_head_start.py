"""The head start (transforms/head_start.py): a process forked before Beam loads reads the first work unit's
files, and the read stage takes their pieces from it, as far as it read them, and reads on: the pieces its own
reading of them gives; a file it did not read, unchanged and with the same settings, is read by the stage. The
command's imports with and without it give the same dataset."""

import contextlib
import gzip
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from ngramflow.pipeline.options import ImportOptions
from ngramflow.pipeline.run import run_import
from ngramflow.transforms import head_start
from ngramflow.transforms.handoff import HandedOverReader
from ngramflow.transforms import lines as reading
from ngramflow.transforms.lines import LineReader, ReadSettings, collapsed_pieces
from ngramflow.transforms.policy import RowPolicy
from ngramflow.transforms.read import ReadNgramFile

NGRAMFLOW = os.path.join(os.path.dirname(sys.executable), "ngramflow")


def _text(seed: int, rows: int, bad_every: int = 997) -> bytes:
    """2012-format rows of a few thousand n-grams in n-gram order, with malformed lines among them."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    ngrams = sorted({" ".join(rng.choice(words) for _ in range(rng.choice([1, 2, 3]))) for _ in range(rows // 4)})
    lines = []
    for ngram in ngrams:
        for year in sorted(rng.sample(range(1900, 2009), rng.randint(1, 6))):
            lines.append(f"{ngram}\t{year}\t{rng.randint(1, 500)}\t{rng.randint(1, 40)}")
            if len(lines) % bad_every == 0:
                lines.append(f"{ngram}\t{year}\tnot-a-count\t1")
    return ("\n".join(lines) + "\n").encode()


def _gz(path, data: bytes) -> str:
    with gzip.open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def _pieces(pieces) -> list[tuple]:
    """Comparable (first line, lines, runs, rejects, dropped, ascending) of each (first line, lines, Collapsed,
    ...)."""
    return [(first, lines, c.runs.to_pylist(), c.rejects.to_pylist(), c.dropped, c.ascending)
            for first, lines, c, *_ in pieces]


def _read_whole(path: str, settings: ReadSettings) -> list[tuple]:
    with contextlib.closing(LineReader(path, None)) as reader:
        return _pieces(collapsed_pieces(reader, None, settings))


def _read_by_the_stage(path: str, settings: ReadSettings) -> list[tuple]:
    """The pieces the read stage gives of a whole file (ReadNgramFile._read's choice): the head start's, as far
    as it read it, and its own of the rest; or all its own."""
    stage, size, stats = ReadNgramFile(settings), os.path.getsize(path), {}
    stage.setup()
    taken = head_start.take(path, settings)
    return _pieces(stage._taken(path, size, taken, stats) if taken else stage._pieces(path, size, 0, 1, stats))


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_files_read_ahead_are_the_first_unit_of_each_worker_if_whole():
    units = [[("/a", 50, 0, 1)], [("/b", 40, 0, 1), ("/c", 5, 0, 1)], [("/d", 30, 0, 1)]]
    assert head_start.files_to_read(units, 2) == ["/a", "/b", "/c"]
    assert head_start.files_to_read(units, 1) == ["/a"]
    assert head_start.files_to_read([[("/a", 50, 0, 2)], [("/a", 50, 1, 2)]], 2) == []  # slices
    assert head_start.files_to_read([], 2) == []


@pytest.fixture
def small_chunks(monkeypatch):
    """Blocks of 4 KiB: a file of many pieces, one of them read line by line (a malformed line)."""
    monkeypatch.setattr(reading, "CHUNK_BYTES", 4096)


def test_the_pieces_taken_are_those_the_stage_reads(tmp_path, small_chunks):
    files = [_gz(tmp_path / f"{i}.gz", _text(i, 4000)) for i in range(2)]
    settings = ReadSettings()
    with head_start.reading(files, settings) as head:
        while not head._reaped():  # both read (a file asked for before the head start began it is the stage's)
            time.sleep(0.01)
        taken = [head.take(path, settings) for path in files]
    assert head.taken == files and _gone(head.pid) and not os.path.exists(head.folder)
    for path, (fmt, pieces, resume, rest) in zip(files, taken):
        assert fmt == "2012" and len(pieces) > 3 and resume is None and rest is None
        assert _pieces(pieces) == _read_whole(path, settings)
        assert any(c.rejects.num_rows for _, _, c, _ in pieces)


def test_a_file_changed_read_otherwise_or_asked_again_is_not_taken(tmp_path):
    path = _gz(tmp_path / "a.gz", _text(1, 2000))
    settings = ReadSettings()
    head = head_start.HeadStart.begin([path], settings)
    try:
        while not head._reaped():  # read
            time.sleep(0.01)
        other = ReadSettings(policy=RowPolicy(lowercase=True))
        assert head.take(path, other) is None  # read with other settings: left to the stage
        assert head.take(str(tmp_path / "b.gz"), settings) is None  # not one of its files
        time.sleep(0.01)
        _gz(path, _text(2, 2000))  # rewritten since
        assert head.take(path, settings) is None
        assert head.take(path, settings) is None  # asked before
        assert head.taken == []
    finally:
        head.close()


@pytest.mark.parametrize("too_large", [False, True])
def test_a_file_asked_for_before_the_head_start_began_it_is_left_to_the_stage(tmp_path, small_chunks, monkeypatch,
                                                                            too_large):
    """The stage claims a file the head start has not begun (it reads it itself); the head start passes it by.
    The file it is reading when asked for, it reads to its end, or, too large for its limit, stops at the end of
    a piece, and the stage reads on from there."""
    first = _gz(tmp_path / "a.gz", _text(5, 400_000))  # a file that holds the head start for a while
    second = _gz(tmp_path / "b.gz", _text(6, 2000))
    if too_large:
        monkeypatch.setattr(head_start, "HEAD_START_BYTES", os.path.getsize(first) - 1)
    settings = ReadSettings()
    with head_start.reading([first, second], settings) as head:
        while not os.path.exists(os.path.join(head.folder, "0.claim")):  # the head start began the first file
            time.sleep(0.001)
        os.kill(head.pid, signal.SIGSTOP)  # and is stopped in it
        try:
            assert head.take(second, settings) is None
        finally:
            os.kill(head.pid, signal.SIGCONT)
        taken = head.take(first, settings)
        _, pieces, resume, rest = taken
        assert (resume is not None) == too_large == (rest is not None)
        if too_large:  # cut short early: the first pieces, not the limit's
            whole = _read_whole(first, settings)
            assert sum(lines for _, lines, *_ in pieces) < sum(lines for _, lines, *_ in whole) / 2
        stage, stats = ReadNgramFile(settings), {}
        stage.setup()
        # The rest of a file cut short is handed over: the head start ends once the stage has read it.
        assert _pieces(stage._taken(first, os.path.getsize(first), taken, stats)) == _read_whole(first, settings)
        while not head._reaped():
            time.sleep(0.01)
        assert sorted(os.listdir(head.folder)) == ["0.claim", "0.pieces", "0.stop", "1.claim"]  # the second not read
    assert head.taken == [first]


@pytest.mark.parametrize("stops_in", [0, 1])
def test_the_head_start_stops_at_its_limit_and_the_stage_reads_on(tmp_path, small_chunks, monkeypatch, stops_in):
    """Past HEAD_START_BYTES of compressed input the head start stops, in its first file or its second: the
    stage reads on where it stopped, and a file it did not begin, whole."""
    files = [_gz(tmp_path / f"{i}.gz", _text(20 + i, 40_000)) for i in range(2)]
    limit = 1 if stops_in == 0 else os.path.getsize(files[0]) + os.path.getsize(files[1]) // 2
    monkeypatch.setattr(head_start, "HEAD_START_BYTES", limit)
    settings = ReadSettings()
    stopped_in = f"{stops_in}.pieces"
    with head_start.reading(files, settings) as head:
        while not os.path.exists(os.path.join(head.folder, stopped_in)):  # stopped there, handing the rest over
            time.sleep(0.01)
        taken = [head.take(path, settings) for path in files]
        stopped = taken[stops_in]
        assert stopped[2] is not None and len(stopped[1]) >= 1  # stopped after a piece at least
        assert (taken[1] is None) == (stops_in == 0)
    with head_start.reading(files, settings) as head:
        while not os.path.exists(os.path.join(head.folder, stopped_in)):
            time.sleep(0.01)
        for path in files:
            assert _read_by_the_stage(path, settings) == _read_whole(path, settings)
        assert head.taken == files[:stops_in + 1]
        while not head._reaped():  # the rest handed over, the head start reads no further
            time.sleep(0.01)


def test_a_readers_buffers_are_not_written_by_a_process_forked_later():
    """A head start forked after this process has read files (a test's, the Python API's) reads into buffers of
    its own: the buffers this process's readers reuse are private to it (shared, the head start's reading wrote
    into the text the stage was parsing)."""
    buffer = reading.BUFFERS.take()
    buffer[:4] = b"mine"
    pid = os.fork()
    if pid == 0:
        buffer[:4] = b"fork"
        os._exit(0)
    os.waitpid(pid, 0)
    assert buffer[:4] == b"mine"
    reading.BUFFERS.give(buffer)


def _stopped_in_first_piece(path: str, settings: ReadSettings, head) -> tuple:
    """The head start's take of PATH, once it stopped in it (its limit set to a byte: after one piece)."""
    while not os.path.exists(os.path.join(head.folder, "0.pieces")):
        time.sleep(0.005)
    return head.take(path, settings)


def _read_by_the_stage_from(path: str, settings: ReadSettings, taken: tuple, monkeypatch, decompressed: list) -> list:
    """The pieces the stage reads of PATH from the head start's TAKEN, a 1 appended to DECOMPRESSED each time a
    reader in this process decompresses a block (the head start, forked before, is not patched)."""
    stage, stats = ReadNgramFile(settings), {}
    stage.setup()
    with monkeypatch.context() as patched:
        patched.setattr(LineReader, "decompress_into", lambda reader, buffer: decompressed.append(1) or (0, 0))
        return _pieces(stage._taken(path, os.path.getsize(path), taken, stats))


def _read_until_error(pieces, into: list) -> Exception:
    """Pieces appended to INTO until reading them fails; the error."""
    with pytest.raises(reading.CORRUPT_ERRORS) as failed:
        for piece in pieces:
            into.append(piece)
    return failed.value


def test_the_rest_of_a_file_is_decompressed_once_by_the_head_start(tmp_path, small_chunks, monkeypatch):
    """The text after the head start's stop comes from the head start (transforms/handoff.py): the stage's
    readers decompress none of the file (neither the text before the stop again, nor the rest)."""
    path = _gz(tmp_path / "a.gz", _text(11, 60_000))
    monkeypatch.setattr(head_start, "HEAD_START_BYTES", 1)
    settings = ReadSettings()
    decompressed = []
    with head_start.reading([path], settings) as head:
        taken = _stopped_in_first_piece(path, settings, head)
        assert len(taken[1]) == 1 and isinstance(taken[3], HandedOverReader)
        read = _read_by_the_stage_from(path, settings, taken, monkeypatch, decompressed)
        while not head._reaped():  # the text's end handed over: the head start is done
            time.sleep(0.01)
    assert decompressed == []
    assert read == _read_whole(path, settings) and len(read) > 50


def test_a_head_start_that_stops_after_the_last_piece_hands_over_the_texts_end(tmp_path, monkeypatch):
    """A file of one piece (a block of 8 MiB) stops the head start at its limit after that piece, at the text's
    end: what it hands over is the end, and the stage decompresses nothing again."""
    path = _gz(tmp_path / "a.gz", _text(14, 2000))
    monkeypatch.setattr(head_start, "HEAD_START_BYTES", 1)
    settings = ReadSettings()
    decompressed = []
    with head_start.reading([path], settings) as head:
        taken = _stopped_in_first_piece(path, settings, head)
        assert len(taken[1]) == 1 and taken[2] is not None
        read = _read_by_the_stage_from(path, settings, taken, monkeypatch, decompressed)
    assert decompressed == []
    assert read == _read_whole(path, settings)


def test_a_head_start_killed_while_handing_over_leaves_the_rest_to_the_stage(tmp_path, small_chunks, monkeypatch):
    """The stage reads on itself from the end of the last piece it took, as it would without a head start."""
    path = _gz(tmp_path / "a.gz", _text(12, 60_000))
    monkeypatch.setattr(head_start, "HEAD_START_BYTES", 1)
    settings = ReadSettings()
    with head_start.reading([path], settings) as head:
        taken = _stopped_in_first_piece(path, settings, head)
        stage, stats = ReadNgramFile(settings), {}
        stage.setup()
        pieces = stage._taken(path, os.path.getsize(path), taken, stats)
        read = [next(pieces) for _ in range(5)]  # the head start's piece, and some of the text it handed over
        os.kill(head.pid, signal.SIGKILL)
        read += list(pieces)
    assert _pieces(read) == _read_whole(path, settings) and len(read) > 50


def test_a_corrupt_gzip_after_the_stop_is_the_error_the_stage_would_meet(tmp_path, small_chunks, monkeypatch):
    """The head start hands over the file's error (a gzip cut short) with its message, after the same pieces."""
    with open(_gz(tmp_path / "whole.gz", _text(13, 60_000)), "rb") as fh:
        data = fh.read()
    path = str(tmp_path / "cut.gz")
    with open(path, "wb") as fh:
        fh.write(data[:len(data) - 100])
    settings = ReadSettings()
    own = []
    with contextlib.closing(LineReader(path, None)) as reader:
        own_error = _read_until_error(collapsed_pieces(reader, None, settings), own)
    monkeypatch.setattr(head_start, "HEAD_START_BYTES", 1)
    with head_start.reading([path], settings) as head:
        taken = _stopped_in_first_piece(path, settings, head)
        stage, stats = ReadNgramFile(settings), {}
        stage.setup()
        read = []
        error = _read_until_error(stage._taken(path, os.path.getsize(path), taken, stats), read)
    assert str(error) == str(own_error)
    assert _pieces(read) == _pieces(own) and len(read) > 50


def test_a_head_start_whose_folder_is_removed_leaves_every_file_to_the_stage(tmp_path):
    """A cleaner of temporary files removing the folder mid-run costs the head start's work, not the import."""
    first = _gz(tmp_path / "a.gz", _text(7, 400_000))
    second = _gz(tmp_path / "b.gz", _text(8, 2000))
    with head_start.reading([first, second], ReadSettings()) as head:
        while not os.path.exists(os.path.join(head.folder, "0.claim")):
            time.sleep(0.001)
        shutil.rmtree(head.folder)
        assert head.take(second, ReadSettings()) is None
        assert head.take(first, ReadSettings()) is None  # its results had nowhere to go
    assert _gone(head.pid) and head.taken == []


def test_a_head_start_ended_early_leaves_the_file_to_the_stage(tmp_path):
    path = _gz(tmp_path / "a.gz", _text(3, 40_000))
    with head_start.reading([path], ReadSettings()) as head:
        os.kill(head.pid, signal.SIGKILL)
        assert head.take(path, ReadSettings()) is None
    assert _gone(head.pid) and not os.path.exists(head.folder)


def test_a_head_start_ends_with_the_process_that_began_it(tmp_path):
    """A killed import leaves no head start behind: the kernel ends it with its parent."""
    path = _gz(tmp_path / "a.gz", _text(4, 400_000))
    script = ("import os, sys; from ngramflow.transforms import head_start, lines; "
              f"h = head_start.HeadStart.begin([{path!r}], lines.ReadSettings()); print(h.pid, h.folder, flush=True); "
              "os.kill(os.getpid(), 9)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pid, folder = done.stdout.split()
    deadline = time.monotonic() + 10
    while not _gone(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(int(pid))
    shutil.rmtree(folder, ignore_errors=True)


def _rows(dataset: str, table: str) -> list[tuple]:
    return sorted(duckdb.sql(f"SELECT * FROM read_parquet('{dataset}/{table}/**/*.parquet')").fetchall())


@pytest.mark.parametrize("merge", ["runs", "input-order"])
def test_the_command_with_a_head_start_writes_the_dataset_the_api_writes(tmp_path, merge):
    """The command's import (with a head start: it says so under --verbose) and the Python API's (none)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):  # three units (of at least 1 MiB, or a file): the head start reads two, a worker's each
        _gz(corpus / f"part-{i}.gz", _text(10 + i, 200_000))
    command = subprocess.run([NGRAMFLOW, "import", str(corpus), "--output", str(tmp_path / "cli"), "--merge", merge,
                              "--workers", "2", "--quiet", "--verbose"], capture_output=True, text=True, timeout=300)
    assert command.returncode == 0, command.stderr[-3000:]
    # The first file is the head start's (it claims it at once); the second, the stage's if Beam was ready first.
    assert re.search(r"head start: [12] of 2 files read while Beam started", command.stderr), command.stderr[-3000:]
    run_import(ImportOptions(inputs=[str(corpus)], output=str(tmp_path / "api"), merge=merge, workers=2),
               progress=False)
    for table in ("ngrams", "vocabulary", "rejects"):
        assert _rows(str(tmp_path / "cli"), table) == _rows(str(tmp_path / "api"), table), table
    assert len(_rows(str(tmp_path / "cli"), "rejects")) > 0
