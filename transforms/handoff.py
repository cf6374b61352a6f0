"""The rest of a file the head start stopped in, decompressed by the head start for the read stage.

A head start (transforms/head_start.py) stops within a file at its limit of compressed input, or when the stage
asks for a file too large for what is left of that limit. The stage read on from where it stopped, and first
decompressed the text before it again: on one large file, 0.3 s of one core while the other idled
(BENCHMARKS.md). Instead the head start hands the rest of the text over: it goes on decompressing the file a
block at a time, into buffers mapped before its fork and shared with the import's process (a reader's own are
private to its process), and the stage parses them as it parses its own blocks (HandedOverReader, a LineReader
whose blocks come from there). Each byte is decompressed once, on the head start's core, while the stage's
threads parse.

Stream contract: SLOTS buffers, all the head start's to fill at first. It decompresses a block into a free one
(after its LINE_ROOM) and says so on one pipe: (buffer, bytes, compressed bytes read by the block's end); 0 bytes
is the text's end, -1 an error of the file's (a corrupt gzip), whose message follows. The stage gives a buffer
back on the other pipe once no piece it handed out is a view of it. A pipe that ends before the text does means
the head start is gone (killed): HandoffLost, and the stage reads the rest itself from the end of the last piece
it took (transforms/read.py), as it would without a head start.
"""

import contextlib
import mmap
import os
import struct

from ngramflow.transforms.lines import AHEAD, BUFFERS, CORRUPT_ERRORS, LINE_ROOM, LineReader

#: Buffers between the head start and the stage, of a reader's blocks (sizing.CHUNK_BYTES): the stage holds one
#: or two (the block it cuts pieces from, and the one of the piece being collapsed), the head start fills the
#: others ahead of it, as a reader's own reading decompresses a block ahead. (Blocks of 2 MiB in 8 buffers held
#: less memory, but put 4 times the pieces, each a sorted run table, into the spill's buffer, whose sort then
#: cost more CPU than the text decompressed again had: one file of 417 MB, 12 rounds, +0.2 CPU s.)
SLOTS = 3
#: A buffer's bytes: a reader's buffer (the room for the part of a line before a block, and a block), and as
#: much room again for the first block, the text the head start read and did not hand out, which a line longer
#: than the room may end.
SIZE = BUFFERS.SIZE + LINE_ROOM
_FILLED = struct.Struct("<iqq")  # buffer, bytes (0: the end; -1: an error, its message's bytes in the third)
_FREE = struct.Struct("<i")  # buffer


class HandoffLost(Exception):
    """The head start ended before the text it was handing over did."""


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = os.read(fd, size - len(data))
        if not more:
            raise HandoffLost()
        data += more
    return data


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


class SharedText:
    """The buffers and pipes of one handover, made before the head start is forked; then each process keeps its
    own ends of the pipes (``in_head_start``, ``in_stage``)."""

    def __init__(self):
        self.buffers = [mmap.mmap(-1, SIZE) for _ in range(SLOTS)]  # anonymous: shared with the fork
        self.filled, self.free = os.pipe(), os.pipe()  # (read end, write end) each

    def in_head_start(self) -> None:
        os.close(self.filled[0])
        os.close(self.free[1])

    def in_stage(self) -> None:
        os.close(self.filled[1])
        os.close(self.free[0])

    def release(self) -> None:
        """(In the stage.) The buffers unmapped, once the stage has read what it takes of the text: their pages
        are not held through the stages after the reading."""
        for buffer in self.buffers:
            with contextlib.suppress(BufferError):  # a view of it still held: unmapped when it goes
                buffer.close()

    def close(self) -> None:
        """(In the stage, at the head start's end.) Its ends of the pipes closed."""
        for fd in (self.filled[0], self.free[1]):
            with contextlib.suppress(OSError):
                os.close(fd)

    def hand_over(self, reader: LineReader) -> None:
        """(In the head start.) The rest of READER's text, from the text it read and has not handed out (which
        starts at its offset, at a line's start) to the file's end or an error of the file's."""
        free = list(range(SLOTS))

        def next_free() -> int:
            return free.pop() if free else _FREE.unpack(_read_exactly(self.free[0], _FREE.size))[0]

        def filled(index: int, size: int, compressed: int, message: bytes = b"") -> None:
            _write_all(self.filled[1], _FILLED.pack(index, size, compressed) + message)

        # The text read and not handed out, as one block if it fits: the blocks after it then begin where a reader
        # of the whole file begins them, and so do the pieces cut from them. There is none when the head start
        # stopped after the file's last piece (range's step of 0 failed the head start, and the stage read the
        # whole file again): only the text's end is handed over.
        unread = reader.forget_text()
        first = len(unread) if len(unread) <= SIZE - LINE_ROOM else reader.block
        for at in range(0, len(unread), max(first, 1)):
            index, size = next_free(), min(first, len(unread) - at)
            self.buffers[index][LINE_ROOM:LINE_ROOM + size] = memoryview(unread)[at:at + size]
            filled(index, size, reader.compressed)
        del unread
        while True:
            index = next_free()
            try:
                size, compressed = reader.decompress_into(self.buffers[index])
            except CORRUPT_ERRORS as err:
                message = str(err).encode()
                filled(index, -1, len(message), message)
                return
            filled(index, size, compressed)
            if not size:
                return

    def next_block(self) -> tuple:
        """(In the stage.) LineReader._next_block's (buffer, bytes, compressed bytes read) of the next block the
        head start decompressed; the file's error as an OSError (its message the head start's), HandoffLost if
        the head start is gone."""
        index, size, compressed = _FILLED.unpack(_read_exactly(self.filled[0], _FILLED.size))
        if size < 0:
            raise OSError(_read_exactly(self.filled[0], compressed).decode())
        return self.buffers[index], size, compressed

    def give(self, buffer) -> None:
        """(In the stage.) BUFFER back to the head start to fill again, if it is one of these."""
        for index, shared in enumerate(self.buffers):
            if buffer is shared:
                try:
                    _write_all(self.free[1], _FREE.pack(index))
                except BrokenPipeError:  # the head start is gone: the next block says so
                    pass
                return


class HandedOverReader(LineReader):
    """The lines of a file from decompressed offset OFFSET (the start of line number LINE) on, in the format FMT,
    their text handed over by the head start (TEXT): a LineReader whose blocks the head start decompressed."""

    def __init__(self, path: str, fmt: str, text: SharedText, offset: int, line: int):
        # LineReader's state, but no file opened: the first block is the head start's.
        self.path, self.pool, self.format, self.text = path, AHEAD, fmt, text
        self.data = self.raw = None
        self.buffer, self.retired, self.handed, self.ahead = b"", [], None, None
        self.at_end, self.compressed, self.start, self.end = False, 0, 0, 0
        self.offset, self.line = offset, line

    def _next_block(self) -> tuple:
        return self.text.next_block()

    def _give(self, buffer) -> None:
        self.text.give(buffer)

    def _close_source(self) -> None:
        pass

    def close(self) -> None:
        super().close()
        self.text.release()
