"""Total n-grams in the input's own order: Google's layout, where each file is sorted by n-gram and no two
files share one (DOMAIN.md), needs no merge across files.

The embedded runner's --merge input-order, the default for large files named as the exports name them, and
never with --lowercase (case variants of one n-gram lie apart in a sorted file). Each file's run tables are
final totals once a run cut by a chunk boundary is joined again, so they are written as the file is read,
with no run file spilled and merged:

    SortedFile      one file's run tables -> its pieces: part files of each order, about
                    RANGE_ROWS n-grams each, cut where the class of the n-grams' first bytes
                    changes, named by the file until the run names them; their
                    records, the order totals, and the tokens for the vocabulary's external
                    sort (transforms/vocabulary_sort.py); refuses n-grams out of order
    lay_out_parts   after the run: every file's spans of n-grams -> refuses files whose spans
                    overlap; else each order's pieces -> part files part-00000, part-00001, ...
                    in n-gram order, their spans apart (a piece whose span holds other pieces
                    is cut between them), small ones joined; and the range records the
                    manifest lists

A file's spans are the first and last n-gram it holds of each order and first character and byte (the 2012
export splits files by first letters, and its punctuation and "other" files interleave with the rest, sharing
no n-gram; the 2020 export's shards are contiguous ranges): two files with no overlapping spans share no
n-gram, since a shared one would lie in a span of each.

A refusal (InputNotSorted) says nothing is wrong with the input, only that it needs the merge: the command
line runs the import again through sorted run files (transforms/spill.py).
"""

import functools

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from ngramflow.schemas import layout
from ngramflow.transforms import columnar, native
from ngramflow.transforms.kernel import Collapsed
from ngramflow.transforms.merge import merge_runs
from ngramflow.transforms.lines import ReadSettings, first_runs, spread
from ngramflow.transforms.pools import named_pool
from ngramflow.transforms.read import ReadNgramFile, file_id
from ngramflow.transforms.runfiles import file_system, make_folder, rows_below
from ngramflow.transforms.sinks import StreamedTables
from ngramflow.transforms.spill import ORDER_TOTALS, TOKEN_RUNS
from ngramflow.transforms.total import by_order, keep_frequent, order_totals, to_ngram_table
from ngramflow.transforms.vocabulary import TokenRuns


class InputNotSorted(RuntimeError):
    """The input is not in n-gram order within and across files: it must be totalled by the merge."""

    MARKER = "ngramflow input not in n-gram order: "

    def __init__(self, reason: str):
        # Beam raises a step's error again with the step's name added: the marker is there already.
        super().__init__(reason if reason.startswith(self.MARKER) else self.MARKER + reason)


def _disorder(path: str, keys: pa.Array) -> str | None:
    """Where KEYS, a file's n-grams of one order, first fail to ascend (named once), or None if they ascend."""
    if native.strictly_ascending(keys):
        return None
    listed = keys.to_pylist()
    at = next(i for i in range(1, len(listed)) if listed[i] <= listed[i - 1])
    return f"{path}: {listed[at]!r} follows {listed[at - 1]!r}"


#: Files whose beginnings are looked at before an import in the input's order (sampled_disorder), spread over
#: the input's list, and the decompressed bytes looked at of each: 8-10 ms for the three.
ORDER_SAMPLE_FILES, ORDER_SAMPLE_BYTES = 3, 1 << 20


def sampled_disorder(files, settings: ReadSettings) -> str | None:
    """Where the beginnings of a few of the (path, size) FILES break the order of n-grams that a file read in
    its own order must keep (SortedFile's check), or None. Files out of order from their first lines (rows of
    each n-gram together, n-grams in no order) are thus totalled through run files from the start, where the
    refusal of the first such file read stopped the import and began it again (a second start of the runner,
    1-2 s). A file out of order further on is still refused when it is read."""
    for path, _ in spread(files, ORDER_SAMPLE_FILES):
        found = first_runs(path, settings, ORDER_SAMPLE_BYTES)
        if found is None:
            continue
        for _, rows in _each_order(found[0]):
            if disorder := _disorder(path, columnar.whole(rows["ngram"])):
                return disorder
    return None


def _each_order(runs: pa.Table):
    """(order, rows) of each order in a run table of one file, in the file's order (total.by_order): each
    order's n-grams must ascend on their own."""
    return by_order(runs, native.orders(columnar.whole(runs["ngram"])))


class _OrderSpans:
    """One order's spans in a file, as its sorted tables come: each table's stretches of keys that share a
    prefix (native.prefix_stretches), with their first and last keys, held as arrays and folded into one
    span a prefix only now and then (a dict of Python strings, widened stretch by stretch, held Python's lock
    for a tenth of a second of the 2020 shards' reading). The file's keys of the order ascend, so do their
    prefixes: a prefix's stretches are consecutive, and only a table's first may continue the one before."""

    #: Stretches held before they are folded, at least: a file's spans stay a few MiB however long it is. A
    #: fold waits for twice the spans the last one left, so that a file of more prefixes than this is not
    #: folded again at every table.
    FOLD_AT = 1 << 16

    def __init__(self):
        self.prefixes, self.firsts, self.lasts, self.held, self.fold_at = [], [], [], 0, self.FOLD_AT

    def add(self, prefixes: np.ndarray, firsts: pa.Array, lasts: pa.Array) -> None:
        self.prefixes.append(prefixes)
        self.firsts.append(firsts)
        self.lasts.append(lasts)
        self.held += len(prefixes)
        if self.held >= self.fold_at:
            folded = self.folded()
            self.prefixes, self.firsts, self.lasts = ([column] for column in folded)
            self.held = len(folded[0])
            self.fold_at = max(self.FOLD_AT, 2 * self.held)

    def folded(self) -> tuple[np.ndarray, pa.Array, pa.Array]:
        """(prefix, first key, last key) of each prefix: its first stretch's first, its last stretch's last."""
        prefixes = np.concatenate(self.prefixes)
        starts = np.flatnonzero(np.diff(prefixes, prepend=~prefixes[0]))  # ~: unlike the first
        ends = columnar.run_stops(starts, len(prefixes)) - 1
        return (prefixes[starts], pa.concat_arrays(self.firsts).take(starts),
                pa.concat_arrays(self.lasts).take(ends))


#: Bytes by class, up to each bound: below "0", digits, ":" to "@", capitals, "[" to "`", small letters, "{" to
#: DEL, and the bytes of characters past ASCII. Google's 2012 export files an n-gram by its first character
#: (1-grams) or two (longer n-grams), letters in either case: its file "a" holds "Apple" and "apple", with
#: "Banana" of file "b" between them; "ab" holds "AB", "Ab", "aB" and "ab"; "a_" holds "A" and "a" followed by
#: a space, a digit or punctuation, with "AB" and "Ab" of other files between those.
_CLASS_BOUNDS = np.array([0x30, 0x3A, 0x41, 0x5B, 0x61, 0x7B, 0x80], np.uint64)


def prefix_class(prefixes: np.ndarray, order: int) -> np.ndarray:
    """The class of each prefix (native.prefix_stretches) of ORDER: of its first byte, and for longer n-grams
    of the byte after the first character too. In a 2012 export file of a letter's n-grams, consecutive
    prefixes of one class come from one stretch of the n-gram order (_CLASS_BOUNDS): SortedFile cuts its pieces
    where the class changes (_cuts), so that none is cut again when the pieces are laid out (_segments)
    because other files' n-grams lie inside it."""
    classes = np.searchsorted(_CLASS_BOUNDS, prefixes >> np.uint64(56), side="right")
    if order > 1:
        classes = classes * (len(_CLASS_BOUNDS) + 1) + np.searchsorted(
            _CLASS_BOUNDS, (prefixes >> np.uint64(48)) & np.uint64(0xFF), side="right")
    return classes


class SortedFile:
    """One file's run tables, in the file's order -> its part files (``add``, then ``finish``), each output
    an element of ReadSortedFiles: piece records, and tagged order totals, token RunFiles and the file's spans
    of n-grams read (before --min-count: another file's rows of an n-gram would change its total).

    Each order's n-grams must ascend through the file: a file of several orders (such as Google's files
    of one order each, concatenated) holds each order's rows in order, interleaved with the others'."""

    def __init__(self, path: str, min_count: int, root: str, schema: pa.Schema, piece_rows: int,
                 tokens: TokenRuns):
        self.path, self.min_count, self.root, self.schema = path, min_count, root, schema
        self.piece_rows, self.tokens = piece_rows, tokens
        self.name, self.pieces = file_id(path), 0
        self.spans = {}  # {order: _OrderSpans}
        self.held = {}  # {order: the last row read of the order, held back: the next table may continue it}
        self.classes = {}  # {order: the prefix class of that row}
        self.letter = None  # the one letter the file's n-grams begin with, in either case, if any (else False)
        self.files, self.parts, self.rows = None, {}, 0  # the piece being written

    def add(self, collapsed: Collapsed):
        for order, rows in _each_order(collapsed.runs):
            # The kernel saw whether the whole table ascends: then each order's rows do, and need no check.
            yield from self._add(order, rows, collapsed.ascending)

    def _add(self, order: int, runs: pa.Table, ascending: bool):
        keys = columnar.whole(runs["ngram"])
        held = self.held.pop(order, None)
        if held is not None:
            last, first = held["ngram"][0].as_py(), keys[0].as_py()
            if first == last:  # a run cut by a chunk boundary
                held = merge_runs(pa.concat_tables([held, runs.slice(0, 1)]))
                runs, keys = runs.slice(1), keys.slice(1)
                if not runs.num_rows:  # the next table may continue it still
                    self.held[order] = held
                    return
                first = keys[0].as_py()
            if first <= last:  # Python's order of str is UTF-8 byte order, Arrow's
                raise InputNotSorted(f"{self.path}: {first!r} follows {last!r}")
            # Written apart from the rows after it: joined, the table was copied whole for one row (combine_chunks).
            yield from self._write(order, held)
        if not ascending and (disorder := _disorder(self.path, keys)):
            raise InputNotSorted(disorder)
        starts, prefixes = native.prefix_stretches(keys)  # sorted keys: each prefix's keys are together
        self._span(order, keys, starts, prefixes)
        self.held[order] = runs.slice(runs.num_rows - 1)
        at = 0
        for cut in self._cuts(order, starts, prefixes):
            yield from self._write(order, runs.slice(at, cut - at))
            yield from self._close_piece()
            at = cut
        yield from self._write(order, runs.slice(at, runs.num_rows - 1 - at))

    def _span(self, order: int, keys: pa.Array, starts: np.ndarray, prefixes: np.ndarray) -> None:
        """Widen the spans of ORDER by its sorted KEYS: the first and last of each prefix among them, whose
        stretches begin at STARTS. A prefix is the first character and the byte after it
        (native.prefix_stretches): Google's exports choose an n-gram's file by its first characters (2012:
        one, or two letters, in either case). Two bytes would not do ("“", "†" and "…" share theirs, E2 80),
        nor two characters (pairs of Chinese characters: tens of thousands of spans)."""
        ends = columnar.run_stops(starts, len(keys)) - 1
        self.spans.setdefault(order, _OrderSpans()).add(prefixes, keys.take(starts), keys.take(ends))

    def _cuts(self, order: int, starts: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        """The rows of a table of ORDER whose prefix stretches begin at STARTS where a new piece begins: where
        the class of the keys' first bytes changes (prefix_class), from the table's first row on, as long as
        every n-gram the file has held begins with one letter, in either case, as those of the 2012 export's
        files of a letter prefix do. Other files are not cut: in a range of n-grams (the 2020 export's shards)
        the class of 2-grams' second bytes changes at every first letter ("a b", "ab c", "b c", "ba d"), and
        pieces cut there were small ones, joined after the run by writing them again."""
        if self.letter is not False:
            letters = (prefixes >> np.uint64(56)) | np.uint64(0x20)  # a capital's small letter
            letter = letters[0]
            one = letters.min() == letters.max() and ord("a") <= letter <= ord("z") and self.letter in (None, letter)
            self.letter = letter if one else False
        if self.letter is False:
            return starts[:0]
        classes = prefix_class(prefixes, order)
        before = self.classes.get(order, classes[0])
        self.classes[order] = classes[-1]
        return starts[np.flatnonzero(np.diff(classes, prepend=before))]

    def finish(self):
        for order, held in self.held.items():
            yield from self._write(order, held)
        if self.spans:
            spans = pa.concat_tables(self._spans_of(order, spans) for order, spans in self.spans.items())
            yield beam.pvalue.TaggedOutput(KEY_SPANS, (file_id(self.path), spans))
        yield from self._close_piece()

    def _spans_of(self, order: int, spans: _OrderSpans) -> pa.Table:
        _, firsts, lasts = spans.folded()
        return pa.table([pa.array(np.full(len(firsts), order, np.int8)), firsts, lasts,
                         pa.repeat(self.path, len(firsts))], schema=SPANS)

    def _write(self, order: int, runs: pa.Table):
        if not runs.num_rows:
            return
        ngrams = to_ngram_table(keep_frequent(runs, self.min_count), order)
        if not ngrams.num_rows:
            return
        if self.files is None:
            self.files = StreamedTables(self.root, self.schema).__enter__()
        name = f"{layout.ngrams_folder(order)}/piece-{self.name}-{self.pieces:05d}"
        self.files.write(name, ngrams)
        ((_, counts),) = order_totals(ngrams)
        yield beam.pvalue.TaggedOutput(ORDER_TOTALS, (order, counts))
        part = self.parts.setdefault(order, {"order": order, "file": f"{name}.parquet", "path": self.path,
                                             "rows": 0, "first": ngrams["ngram"][0].as_py()})
        part["last"] = ngrams["ngram"][-1].as_py()
        part["rows"] += ngrams.num_rows
        for run in self.tokens.add([ngrams], self.files.path(name)):
            yield beam.pvalue.TaggedOutput(TOKEN_RUNS, run)
        self.rows += ngrams.num_rows
        if self.rows >= self.piece_rows:
            yield from self._close_piece()

    def _close_piece(self):
        if self.files is None:
            return
        self.files.__exit__(None, None, None)  # the piece's files renamed into place
        yield from self.parts.values()
        self.pieces += 1
        self.files, self.parts, self.rows = None, {}, 0

    def abandon(self, err: BaseException) -> None:
        """Leave the piece being written unfinished on ERR (its files keep their temporary names)."""
        if self.files is not None:
            self.files.__exit__(type(err), err, err.__traceback__)


#: ReadSortedFiles' tagged output of each file's spans of n-grams: (file_id, a table of SPANS), written to
#: the build folder as a Parquet file (its thousands of spans were 0.07 s of JSON to read back, a file of 80M
#: rows' 21).
KEY_SPANS = "key_spans"
SPANS = pa.schema([("order", pa.int8()), ("first", pa.string()), ("last", pa.string()), ("path", pa.string())])


class ReadSortedFiles(ReadNgramFile):
    """A work unit -> the part files of its files, as SortedFile writes them; the outputs of ReadNgramFile
    besides its run tables (rejects, file stats) and of SortedFile (piece records, tagged order totals,
    token RunFiles and key spans)."""

    def __init__(self, settings: ReadSettings, min_count: int, folder: str, budget: int, root: str,
                 schema: pa.Schema, piece_rows: int):
        super().__init__(settings)
        self.min_count, self.folder, self.budget, self.root = min_count, folder, budget, root
        self.schema, self.piece_rows = schema, piece_rows
        self.file = None

    def setup(self):
        super().setup()
        make_folder(self.folder)

    def start_bundle(self):
        # The worker's budget, halved as a range's merge halves it: the tokens, and the tables written. One
        # spiller for the bundle's files: a run a file made the vocabulary's merge pass over them again
        # (38 files of 1-grams, 3M tokens: 2.4 s for the vocabulary).
        self.tokens = TokenRuns(self.folder, self.budget // 2)

    def process(self, unit):
        try:
            yield from super().process(unit)
        except BaseException as err:
            if self.file is not None:
                self.file.abandon(err)
                self.file = None
            raise

    def take_runs(self, path: str, collapsed: Collapsed):
        if self.file is None:
            self.file = SortedFile(path, self.min_count, self.root, self.schema, self.piece_rows, self.tokens)
        yield from self.file.add(collapsed)

    def file_read(self, path: str):
        if self.file is not None:
            yield from self.file.finish()
        self.file = None

    def unit_read(self):
        return ()

    def finish_bundle(self):
        super().finish_bundle()
        # The spiller dropped with its runs: its cache of tokens is not held while the DoFn waits for a bundle.
        runs, self.tokens = self.tokens.flush(), None
        for run in runs:
            yield beam.pvalue.TaggedOutput(TOKEN_RUNS, WindowedValue(run, MIN_TIMESTAMP, [GlobalWindow()]))


def _by_order(records: list[dict]) -> dict[int, list[dict]]:
    """Records with an "order" and a "first" n-gram -> per order, in n-gram order."""
    orders = {}
    for record in sorted(records, key=lambda r: r["first"]):  # Python's order of str: UTF-8 byte order
        orders.setdefault(record["order"], []).append(record)
    return orders


def _read_file(path: str, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file's rows (COLUMNS of them), wherever the build folder is (a local path, gs://, s3://). Read
    as one file: pq.read_table loads pyarrow.dataset, 0.2 s of a single thread at the end of the import."""
    fs, inner = file_system(path)
    with fs.open_input_file(inner) as fh:
        return pq.ParquetFile(fh).read(columns=columns)


def _read(out, piece: dict, columns: list[str] | None = None) -> pa.Table:
    """A piece's rows (COLUMNS of them)."""
    return _read_file(out.join(piece["file"]), columns)


def _spans_by_order(out) -> dict[int, pa.Table]:
    """Per order, every file's spans (SPANS), in n-gram order; InputNotSorted unless the spans of every two
    files are apart (the module's docstring): then no span holds a key of another. (A prefix's keys lie
    between those of the prefixes before and after it, so spans that overlap are neighbours in n-gram
    order.)"""
    files = out.list_files(layout.KEY_SPANS, ".parquet")
    if not files:
        return {}
    spans, by_order = pa.concat_tables(_read_file(path) for path in files), {}
    for order in pc.unique(spans["order"]).to_pylist():
        rows = spans.filter(pc.equal(spans["order"], order))
        # Arrow's order of strings is UTF-8 byte order
        rows = rows.take(pc.sort_indices(rows, [("first", "ascending"), ("last", "ascending")])).combine_chunks()
        # Neighbours that overlap: the first's last key at or past the next one's first
        at = pc.index(pc.less_equal(rows["first"].slice(1), rows["last"].slice(0, rows.num_rows - 1)), True).as_py()
        if at >= 0:
            before, after = rows.slice(at, 2).to_pylist()
            raise InputNotSorted(f"{before['path']} and {after['path']} both hold {order}-grams from "
                                 f"{after['first']!r} to {min(before['last'], after['last'])!r}")
        by_order[order] = rows
    return by_order


def _segments(pieces: list[dict], spans: pa.Table, out) -> list[dict]:
    """The pieces of one order as segments, in n-gram order: a piece whole, or cut into its stretches where
    other files' rows lie between them; each {**piece, "start", "stop": its rows in the piece, "rows",
    "first", "last"}. The spans of the order (SPANS, in n-gram order) come in stretches of one file each
    (the 2012 export splits its files by first letter in either case: "Apple" and "apple" share a file that
    "Banana" lies between)."""
    starts = {}  # {path: the first n-gram of each of its stretches but its first}
    paths = spans["path"]
    changed = np.flatnonzero(columnar.numpy(pc.not_equal(paths.slice(1), paths.slice(0, len(paths) - 1)))) + 1
    for path, first in zip(paths.take(changed).to_pylist(), spans["first"].take(changed).to_pylist()):
        starts.setdefault(path, []).append(first)
    segments = []
    for piece in pieces:
        inside = [key for key in starts.get(piece["path"], ()) if piece["first"] < key <= piece["last"]]
        if not inside:
            segments.append({**piece, "start": 0, "stop": piece["rows"]})
            continue
        keys = _read(out, piece, ["ngram"])["ngram"].combine_chunks()
        bounds = [0, *sorted({rows_below(keys, key) for key in inside}), len(keys)]
        segments += [{**piece, "start": start, "stop": stop, "rows": stop - start, "first": keys[start].as_py(),
                      "last": keys[stop - 1].as_py()} for start, stop in zip(bounds, bounds[1:]) if stop > start]
    return sorted(segments, key=lambda segment: segment["first"])


def _rows_of(out, segment: dict):
    """A segment's rows, a row group at a time: only the piece's row groups that hold some are read."""
    fs, path = file_system(out.join(segment["file"]))
    with fs.open_input_file(path) as fh:
        piece, at = pq.ParquetFile(fh), 0
        for group in range(piece.num_row_groups):
            rows = piece.metadata.row_group(group).num_rows
            if at < segment["stop"] and at + rows > segment["start"]:
                start = max(segment["start"], at)
                yield piece.read_row_group(group).slice(start - at, min(segment["stop"], at + rows) - start)
            at += rows


#: A segment of fewer rows than this share of a part file's is joined to its small neighbours: a file's pieces
#: are written whole, and rewriting pieces near a part file's size to join them cost more than it saved.
SMALL_PIECE = 8


def _groups(segments: list[dict], rows: int):
    """Consecutive segments -> the groups that become one part file each: runs of small segments (under
    rows / SMALL_PIECE each) of up to ROWS rows, and every other segment alone."""
    group = []
    for segment in segments:
        small = segment["rows"] < rows // SMALL_PIECE
        if group and (not small or sum(s["rows"] for s in group) + segment["rows"] > rows):
            yield group
            group = []
        if not small:
            yield [segment]
            continue
        group.append(segment)
    if group:
        yield group


def _write_part(out, schema: pa.Schema, name: str, group: list[dict], whole: dict) -> bool:
    """Part file NAME of a group of segments: a piece kept whole renamed, else the segments' rows written;
    whether it was renamed."""
    if len(group) == 1 and group[0]["rows"] == whole[group[0]["file"]]:
        FileSystems.rename([out.join(group[0]["file"])], [out.join(f"{name}.parquet")])
        return True
    with StreamedTables(out.path, schema) as files:
        for segment in group:
            for rows in _rows_of(out, segment):
                files.write(name, rows)
    return False


def lay_out_parts(out, schema: pa.Schema, part_rows: int, workers: int = 1) -> int:
    """After a run of ReadSortedFiles into the build folder OUT (pipeline/output.OutputDir): check that no
    two files' spans overlap (else InputNotSorted), then lay each order's pieces out as part files in n-gram
    order whose spans are apart (pieces cut where other files' rows lie between, small segments joined up to
    PART_ROWS rows; a piece kept whole is renamed), named part-00000, part-00001, ..., by WORKERS threads,
    with their range records (layout.RANGES); returns the part files."""
    spans, parts = _spans_by_order(out), 0
    with named_pool(workers, "parts") as pool:  # Parquet's work leaves Python's lock
        for order, pieces in _by_order(out.read_records(layout.PIECES)).items():
            segments = _segments(pieces, spans[order], out)
            for before, after in zip(segments, segments[1:]):  # what the spans promise
                if after["first"] <= before["last"]:
                    raise InputNotSorted(f"the {order}-grams of {before['path']} and {after['path']} interleave")
            whole = {piece["file"]: piece["rows"] for piece in pieces}
            groups = list(_groups(segments, part_rows))
            names = [layout.part(layout.ngrams_folder(order), number) for number in range(len(groups))]
            written = pool.map(functools.partial(_write_part, out, schema, whole=whole), names, groups)
            renamed = [group[0]["file"] for group, kept in zip(groups, written) if kept]
            for name, group in zip(names, groups):
                out.write_json(f"{layout.RANGES}/order-{order}-{name.rsplit('/', 1)[1]}.json", {
                    "order": order, "file": f"{name}.parquet", "first": group[0]["first"], "last": group[-1]["last"]})
            out.delete([file for file in whole if file not in renamed])
            parts += len(groups)
    return parts


class WriteSortedInput(beam.PTransform):
    """Work units -> the outputs of ReadSortedFiles: "pieces" (records of the part files written, named by
    their file), "key_spans", "rejects", "file_stats", "order_totals", "token_runs" (RunFiles)."""

    def __init__(self, reader: ReadSortedFiles):
        super().__init__()
        self.reader = reader

    def expand(self, units):
        return (
            units
            | "Spread work units over workers" >> beam.Reshuffle()
            | "Read each file and write it in its own order" >> beam.ParDo(self.reader).with_outputs(
                ReadNgramFile.REJECTS, ReadNgramFile.FILE_STATS, ORDER_TOTALS, TOKEN_RUNS, KEY_SPANS, main="pieces")
        )
