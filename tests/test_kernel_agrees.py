"""The native kernel and the careful line-by-line parser apply one rule per case.

kernel.collapse_chunk (transforms/kernel.py) runs the native kernel and hands a
chunk to the careful parser (parse.line_by_line, then collapse.collapse) when the
kernel cannot vouch for every line. Both run on the same generated chunks, each
with adversarial lines among clean ones, under several row policies: where the
kernel vouches, its run table and dropped-row count must be the careful path's
and the careful parser must reject nothing; whatever the route, collapse_chunk
must give the careful runs and rejects (file, line, reason, raw). The fuzz test
puts each of over 100,000 random malformations into a chunk of its own, so that
the kernel must decide on every one of them.
"""

import codecs
import gzip
import random

import pyarrow as pa
import pytest

from conftest import copied, import_ok, ngrams_of, vocabulary_of
from ngramflow.transforms import _kernel
from ngramflow.schemas import YEAR_MAX, YEAR_MIN
from ngramflow.transforms import columnar, kernel, parse
from ngramflow.transforms.checked import CountOverflow
from ngramflow.transforms.collapse import collapse
from ngramflow.transforms.lines import LineReader
from ngramflow.transforms.policy import RowPolicy

SEED = 20240607
CHUNKS = 300
FUZZ_LINES = 100_000
#: Policies every comparison is made under: each rule of policy.py on and off.
POLICIES = [(RowPolicy(), False), (RowPolicy(pos="keep"), True), (RowPolicy(lowercase=True), True),
            (RowPolicy(year_min=1700, year_max=1900), False),
            (RowPolicy(pos="keep", lowercase=True, year_min=1600), True)]
#: Tokens of the clean lines: tagged words, wildcards, boundaries, case that folds in ASCII and beyond.
WORDS = ["the", "The", "cat", "caf\u00e9", "CAF\u00c9", "\u4e2d\u6587", "_START_", "x_NOUN", "X_NOUN", "_NOUN_",
         "Burnt_VERB", ",", "a", "A", "\u03a3\u0391\u03a3", "\u0130", "ok_.", "_X_", "__ADJ"]
BOM = codecs.BOM_UTF8

# Numerals as they may appear in a count or year field, odd ones included.
NUMERALS = ["0", "-0", "+0", "+5", "-5", "007", "0000", " 5", "5 ", "  5  ", "5.0", "5.", ".5", "1e3", "1E3",
            "0x10", "0X1F", "0b1", "", " ", "5,5", "5_000", "\u00a05", "\u0665", "\u00b2", "\uff15", "5\x0b",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999999",
            "1e308", "inf", "nan", "--5", "5-", "1 000"]
YEARS = ["1399", "1400", "2100", "2101", "0", "-1990", "+1990", "01990", " 1990", "1990 ", "19 90", "1990.0",
         "2147483648", "99999999999", "-0"]
NGRAMS = ["a", "a b", " a", "a ", "a  b", "", " ", "a b c d e", "a b c d e f", "a\u00a0b", "\ufeffa", "a\ufeff",
          "\u00e9t\u00e9", "a,b", "a,", ",", "burnt_VERB", "a\rb", "\x00", "a\x0bb"]
ENDINGS = [b"\n", b"\r\n", b"\r\r\n", b"\n\r\n"]
RAW_DAMAGE = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", BOM, b"\t", b"\r", b",", b" "]


def _clean(rng, fmt, ngram):
    year = str(rng.randrange(1500, 2020))
    match, volume = str(rng.randrange(1, 10**6)), str(rng.randrange(1, 100))
    if fmt == "2012":
        return "\t".join([ngram, year, match, volume])
    if fmt == "2009":
        return "\t".join([ngram, year, match, str(rng.randrange(1, 500)), volume])
    tuples = [f"{y},{rng.randrange(1, 10**6)},{rng.randrange(1, 100)}" for y in sorted(rng.sample(range(1500, 2020), 3))]
    return "\t".join([ngram] + tuples)


def _odd_fields(rng, fmt, line):
    """A clean line with one of its fields, or the n-gram, swapped for an odd one."""
    ngram, *rest = line.split("\t")
    if rng.random() < 0.25:
        return "\t".join([rng.choice(NGRAMS)] + rest)
    if fmt == "2020":
        which = rng.randrange(len(rest))
        parts = rest[which].split(",")
        spot = rng.randrange(3)
        parts[spot] = rng.choice(YEARS if spot == 0 else NUMERALS)
        rest[which] = ",".join(parts)
    else:
        spot = rng.randrange(len(rest))
        rest[spot] = rng.choice(YEARS if spot == 0 else NUMERALS)
    return "\t".join([ngram] + rest)


def _tuple_damage(rng, line):
    """2020 only: the year tuples broken in one of the ways a damaged file breaks them."""
    ngram, *tuples = line.split("\t")
    damage = rng.choice(["drop_field", "extra_field", "empty_tuple", "trailing_tab", "no_tuples",
                         "semicolon", "double_tab", "duplicate_year", "odd_year"])
    if damage == "odd_year":  # the kernel reads a plain four-digit year at once, any other digit by digit
        at = rng.randrange(len(tuples))
        year, rest = tuples[at].split(",", 1)
        odd = rng.choice(["0" + year, year[:3], year[:2] + "x" + year[3], "+" + year, year + " ", "1399", "2101",
                          "0999", "00" + year, year[:3] + "/", year[:3] + ":", "\xff" + year[1:]])
        tuples[at] = f"{odd},{rest}"
    elif damage == "drop_field":
        tuples[0] = tuples[0].rsplit(",", 1)[0]
    elif damage == "extra_field":
        tuples[-1] += ",1"
    elif damage == "empty_tuple":
        tuples.insert(1, "")
    elif damage == "trailing_tab":
        tuples.append("")
    elif damage == "no_tuples":
        tuples = []
    elif damage == "semicolon":
        tuples[0] = tuples[0].replace(",", ";", 1)
    elif damage == "double_tab":
        return "\t".join([ngram, ""] + tuples)
    else:
        tuples.append(tuples[0])
    return "\t".join([ngram] + tuples)


def _damage_bytes(rng, raw):
    """Bytes (invalid UTF-8, a BOM, stray separators) put somewhere into a line."""
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + rng.choice(RAW_DAMAGE) + raw[at:]


def _adversarial(rng, fmt, line):
    kinds = ["fields", "bytes", "field_count", "ending", "empty"] + (["tuples"] * 2 if fmt == "2020" else [])
    kind = rng.choice(kinds)
    if kind == "fields":
        return _odd_fields(rng, fmt, line).encode()
    if kind == "tuples":
        return _tuple_damage(rng, line).encode()
    if kind == "field_count":
        fields = line.split("\t")
        return "\t".join(fields[:-1] if rng.random() < 0.5 else fields + [rng.choice(["", "1"])]).encode()
    if kind == "empty":
        return b""
    return _damage_bytes(rng, line.encode())


def _chunk(rng, fmt) -> bytes:
    """Clean lines, mostly in runs of one n-gram as Google's files are, with up to three adversarial ones."""
    words = WORDS
    ngrams = []
    while len(ngrams) < 20:
        ngrams.append(" ".join(rng.choice(words) for _ in range(rng.randrange(1, 4))))
    if rng.random() < 0.5:  # in order, as in Google's files: the kernel's ascending flag is put to the test
        ngrams = sorted(set(ngrams), key=str.encode)  # each once: runs of up to 3 lines, as the others
    lines = [_clean(rng, fmt, ngram) for ngram in ngrams for _ in range(rng.randrange(1, 4))]
    raw = [line.encode() for line in lines]
    for _ in range(rng.randrange(4)):
        at = rng.randrange(len(raw))
        raw[at] = _adversarial(rng, fmt, lines[at])
    endings = [b"\n"] * len(raw)
    if rng.random() < 0.3:
        endings[rng.randrange(len(raw))] = rng.choice(ENDINGS)
    if rng.random() < 0.2:
        raw[0] = BOM + raw[0]  # a chunk may begin with any line of a file
    text = b"".join(line + end for line, end in zip(raw, endings))
    return text[:-1] if rng.random() < 0.2 else text  # a file's last line may lack its newline


def _careful(chunk, fmt, policy, keep_years):
    """(runs, dropped, rejects) of the reference: parse.line_by_line, then collapse."""
    rows, rejects = parse.line_by_line(chunk, fmt, "f.gz", 101)
    runs, dropped = collapse(rows, columnar.run_starts(rows["ngram"].combine_chunks()), policy, keep_years)
    return runs, dropped, rejects


def _vouches(chunk, fmt) -> bool:
    return _kernel.collapse_chunk(chunk, fmt, YEAR_MIN, YEAR_MAX, False, False, False) is not None


@pytest.mark.parametrize("fmt", ["2012", "2020", "2009"])
def test_both_paths_give_the_same_runs_and_rejects_on_adversarial_chunks(fmt):
    rng = random.Random(f"{SEED}-{fmt}")
    vouched = ascending = 0
    for number in range(CHUNKS):
        chunk = _chunk(rng, fmt)
        policy, keep_years = rng.choice(POLICIES)
        try:
            runs, dropped, rejects = _careful(chunk, fmt, policy, keep_years)
        except CountOverflow:  # an odd line's huge count in a run: both paths name the n-gram
            with pytest.raises(CountOverflow):
                kernel.collapse_chunk(chunk, fmt, "f.gz", 101, policy, keep_years)
            continue
        routed = kernel.collapse_chunk(chunk, fmt, "f.gz", 101, policy, keep_years)
        context = f"{fmt} chunk {number} of seed {SEED}, {policy}:\n{chunk!r}\ncareful rejects: {rejects.to_pylist()}"
        if _vouches(chunk, fmt):
            vouched += 1
            assert rejects.num_rows == 0, context
        assert routed.runs.equals(runs) and routed.dropped == dropped and routed.rejects.equals(rejects), context
        keys = runs["ngram"].to_pylist()
        assert routed.ascending == all(a.encode() < b.encode() for a, b in zip(keys, keys[1:])), context
        ascending += routed.ascending
    # The kernel must really be tried on odd lines it accepts, not only hand chunks over; and on both answers.
    assert vouched >= CHUNKS // 10 and CHUNKS // 10 <= ascending <= CHUNKS - CHUNKS // 10


@pytest.mark.parametrize("fmt", ["2012", "2020", "2009"])
def test_the_kernel_vouches_only_for_what_the_careful_parser_reads_alike_on_random_malformations(fmt):
    """Each random malformation in a small chunk of its own; the chunks the kernel vouches for are compared
    with the careful path in batches (a batch of vouched chunks is itself one the kernel must vouch for)."""
    rng = random.Random(f"fuzz-{SEED}-{fmt}")
    lines = FUZZ_LINES // 3 + 1
    batch, vouched = [], 0

    def compare():
        chunk = b"".join(batch)
        for policy, keep_years in POLICIES:
            found = kernel.collapse_chunk(chunk, fmt, "f.gz", 101, policy, keep_years)
            runs, dropped, rejects = _careful(chunk, fmt, policy, keep_years)
            assert rejects.num_rows == 0, rejects.to_pylist()[:3]
            assert found.rejects.num_rows == 0 and found.runs.equals(runs) and found.dropped == dropped, policy
        batch.clear()

    for _ in range(lines):
        clean = [_clean(rng, fmt, " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4))))
                 for _ in range(rng.randrange(1, 4))]
        at = rng.randrange(len(clean))
        raw = [line.encode() for line in clean]
        raw[at] = _adversarial(rng, fmt, clean[at])
        chunk = b"".join(line + b"\n" for line in raw)
        if _vouches(chunk, fmt):
            vouched += 1
            batch.append(chunk)
            if len(batch) == 2000:
                compare()
    if batch:
        compare()
    assert vouched >= lines // 20, "the fuzz must reach the kernel's own answers"


def test_a_signed_zero_is_a_malformed_count_on_both_paths():
    for chunk in (b"a\t1990\t-0\t1\n", b"a\t1990,-0,1\n", b"a\t1990\t1\t+0\n"):
        fmt = "2020" if b"," in chunk else "2012"
        routed = kernel.collapse_chunk(chunk, fmt, "f.gz", 101, RowPolicy(), False)
        runs, _, rejects = _careful(chunk, fmt, RowPolicy(), False)
        assert not _vouches(chunk, fmt) and routed.runs.num_rows == 0 == runs.num_rows
        assert routed.rejects.equals(rejects) and rejects.num_rows == 1


def _gz(path, text: bytes):
    with gzip.open(path, "wb") as fh:
        fh.write(text)
    return path


def test_a_byte_order_mark_at_the_start_of_a_file_is_dropped_in_every_format_and_path(tmp_path):
    rows_2012 = b"caf\xc3\xa9 au\t1990\t5\t2\ncaf\xc3\xa9 au\t1991\t1\t1\nthe\t1990\t9\t3\n"
    rows_2020 = b"caf\xc3\xa9 au\t1990,5,2\t1991,1,1\nthe\t1990,9,3\n"
    # the careful path: a reject elsewhere in the chunk sends it there
    careful_2012 = rows_2012 + b"the\t1990\tnine\t3\n"
    datasets = {}
    for name, text in {"plain": rows_2012, "2012": BOM + rows_2012, "careful": BOM + careful_2012,
                       "2020": BOM + rows_2020}.items():
        folder = tmp_path / name
        folder.mkdir()
        _gz(folder / "f.gz", text)
        datasets[name] = import_ok(folder, tmp_path / f"out-{name}", "--max-reject-rate", "1")
    for name, dataset in datasets.items():
        assert ngrams_of(dataset) == ngrams_of(datasets["plain"]), name
        assert vocabulary_of(dataset) == vocabulary_of(datasets["plain"]), name


@pytest.mark.parametrize("slice_bytes", [1, 2, 3, 4, 5, 64])
def test_slices_read_a_file_with_a_byte_order_mark_like_the_whole_file(tmp_path, slice_bytes):
    text = BOM + b"a\t1990\t1\t1\nb\t1990\t2\t1\n\xef\xbb\xbfc\t1990\t3\t1\n"
    path = str(_gz(tmp_path / "f.gz", text))
    whole = copied(LineReader(path, None).lines_before(None))
    assert whole == [(1, 3, text[3:])] and LineReader(path, None).format == "2012"
    slices = -(-len(text) // slice_bytes)
    continued, fresh, reader = [], [], LineReader(path, None)
    for k in range(slices):
        end = None if k == slices - 1 else (k + 1) * slice_bytes
        continued += copied(reader.lines_before(end))
        skipping = LineReader(path, None)
        list(skipping.lines_before(k * slice_bytes))
        fresh += copied(skipping.lines_before(end))
    for pieces in (continued, fresh):
        assert b"".join(piece for _, _, piece in pieces) == text[3:]
        assert pa.concat_tables([_runs_of(p, path, first) for first, _, p in pieces]).equals(_runs_of(text[3:], path, 1))


def _runs_of(chunk, path, first_line):
    return kernel.collapse_chunk(chunk, "2012", path, first_line, RowPolicy(), False).runs
