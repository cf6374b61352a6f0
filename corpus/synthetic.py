"""A deterministic synthetic Google Books Ngram corpus, in Google's 2012 and 2020 formats.

Both formats encode exactly the same (n-gram, year, match_count, volume_count)
rows. Under ``out_dir``:

    2012/googlebooks-{lang}-all-{n}gram-20120701-{index}.gz   one row per n-gram-year
    2012/googlebooks-{lang}-all-totalcounts-20120701.txt
    2020/{lang}/{n}-{i:05d}-of-{N:05d}.gz                      one row per n-gram
    2020/{lang}/totalcounts-{n}
    corpus.json                                                the CorpusReport

The data imitates what makes the real corpus hard to process: a Zipf vocabulary
of pronounceable synthetic words with case variants ("Bato"/"bato"), POS-tagged
tokens (``bato_NOUN``) and wildcards (``_NOUN_``), ``_START_``/``_END_``
sentence boundaries, accented Latin, Cyrillic, Greek and CJK tokens,
punctuation, numbers and a few very long tokens; year series that start
anywhere from 1500 (mostly in the last two centuries), have gaps and grow with
the number of books printed; heavy-tailed counts; and Google's publication
threshold (every n-gram totals at least ``min_total``). Higher orders are built
by chaining lower ones ("a b" + "b c" -> "a b c"), so continuation counts are
not trivial.

Totals files: the 2020 ``totalcounts-n`` holds, for each year with rows of
order n, the sum of that order's match counts and the largest volume count of
any of its rows. The 2012 file serves all orders, so per year it takes the
largest of those per-order sums and volumes, with page_count = volume +
(match - volume) // 3: the 1-gram sum except in sparse early years where
longer n-grams outweigh the few 1-grams. Either way every count of every
n-gram is at most its year's total.

Malformed lines (``malformed=K``) are inserted between n-grams, K per format,
from a random stream of their own, so the good rows are byte for byte those of
``malformed=0``; each is recorded with its 1-based line number in the
decompressed file.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import string
import time
from dataclasses import dataclass

import numpy as np
from isal import igzip

FIRST_YEAR, LAST_YEAR = 1500, 2019
MAX_ORDER = 5
TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", "X", ".")
WILDCARDS = tuple(f"_{t}_" for t in TAGS)
START, END = "_START_", "_END_"
# Google ships a 2012 file per POS wildcard first token, except for _X_ and _._.
_WILDCARD_FILES = frozenset(WILDCARDS[:10])
PUNCTUATION = (",", ".", '"', "'", ";", ":", "(", ")", "!", "?", "-", "--", "...")
MALFORMED_KINDS = ("field_count", "non_numeric", "negative_count", "year_out_of_range",
                   "empty_ngram", "too_many_tokens", "invalid_utf8", "bad_year_tuple")

# Share of the row budget per order (renormalised over the orders asked for),
# and per order the Beta(0.6, b) parameter of a rare n-gram's year density:
# higher orders have shorter, sparser series, hence more distinct n-grams per row.
_ROW_SHARE = {1: 0.3, 2: 0.35, 3: 0.35, 4: 0.35, 5: 0.35}
_DENSITY_B = {1: 6.0, 2: 10.0, 3: 14.0, 4: 16.0, 5: 18.0}
_TOP_MATCH = 3e7  # expected match count of the most frequent token in LAST_YEAR
_GROWTH_YEARS = 55.0  # e-folding time of the number of books printed per year
_CHUNK_ROWS = 1 << 18  # rows generated and formatted per step
_FLUSH_BYTES = 1 << 19  # text buffered per output file before compressing
# ISA-L (isal) only has levels 0-3; level 3 is within a few percent of zlib -6
# in size and ~15x faster. Writes are buffered to fixed sizes, so the same
# arguments give the same gzip bytes (compare decompressed text across CPUs,
# as ISA-L picks CPU-specific code).
_GZIP_LEVEL = 3

_ONSETS = ("", "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "y", "z", "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "pl", "pr", "sh", "sl",
           "sp", "st", "str", "th", "tr", "wh")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ee", "oa", "ou", "y")
_CODAS = ("", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "rk", "ck", "sh")
_ACCENTS = {"a": "áàâä", "e": "éèêë", "i": "íïî", "o": "óöô", "u": "úüû", "n": "ñ", "c": "ç"}
_CYRILLIC = dict(zip("abcdefghijklmnoprstuvwyz", "абцдефгхийклмнопрстуввыз"))
_GREEK = dict(zip("abcdefghijklmnoprstuvwyz", "αβψδεφγηιξκλμνοπρστυβωυζ"))
_SYLLABLES = np.array([o + v + c for o in _ONSETS for v in _VOWELS for c in _CODAS], dtype=object)
_WORD_TAGS = ("NOUN", "NOUN", "NOUN", "VERB", "VERB", "ADJ", "ADJ", "ADV", "PRON", "DET", "ADP", "CONJ",
              "PRT", "X")


# Tokens every vocabulary starts with, and their expected match count in LAST_YEAR.
# Comma and full stop are the two most frequent 1-grams of the real corpus.
_SPECIALS = (
    [(p, _TOP_MATCH / (i + 1) ** 1.3) for i, p in enumerate(PUNCTUATION)]
    + [(f"{p}_.", _TOP_MATCH / (i + 1) ** 1.3 / 2) for i, p in enumerate(PUNCTUATION[:4])]
    + [(w, _TOP_MATCH * 0.3 / (i + 1)) for i, w in enumerate(WILDCARDS)]
    + [(START, _TOP_MATCH * 0.05), (END, _TOP_MATCH * 0.05)]
)


@dataclass
class CorpusReport:
    """What ``generate`` wrote; also saved as ``DIR/corpus.json``."""

    out_dir: str
    seed: int
    rows_2012: int  # good (n-gram, year) rows over all orders
    ngrams: dict[int, int]  # distinct n-grams per order
    files: list[str]  # relative paths of every n-gram data file (.gz) written
    malformed: list[dict]  # {"file": relpath, "line": 1-based line in the decompressed file, "kind": str}


# ---------------------------------------------------------------- file index rule


def index_2012(first_token: str, order: int) -> str:
    """The suffix of the 2012 file an n-gram starting with ``first_token`` belongs in.

    1-grams: a lower-cased ASCII letter, a digit, ``pos`` (wildcards and
    sentence boundaries), ``punctuation`` or ``other``. Longer n-grams: the
    POS wildcard itself (``_NOUN_``), else the first two characters lower-cased
    (``th``), with ``_`` for a non-letter second character (``a_`` for "a",
    "a_DET", "o'clock"), a digit, ``punctuation`` (also ``_START_``, ``_X_``
    and ``_._``, which have no file of their own) or ``other`` (non-ASCII).
    """
    c = first_token[0]
    if order == 1 and (first_token in WILDCARDS or first_token in (START, END)):
        return "pos"
    if order > 1 and first_token in _WILDCARD_FILES:
        return first_token
    if c in string.ascii_letters:
        if order == 1:
            return c.lower()
        c2 = first_token[1:2]
        return c.lower() + (c2.lower() if c2 and c2 in string.ascii_letters else "_")
    if c in string.digits:
        return c
    return "punctuation" if c in string.punctuation else "other"


# ---------------------------------------------------------------- vocabulary


def _base_words(rng, n: int) -> list[str]:
    """``n`` distinct pronounceable lower-case words, shortest (most frequent) roughly first."""
    words = {}
    while len(words) < n:
        m = 2 * (n - len(words)) + 16
        syllables = _SYLLABLES[rng.integers(0, len(_SYLLABLES), (4, m))]
        count = 1 + rng.binomial(3, 0.35, m)
        drawn = syllables[0]
        for j in range(1, 4):
            drawn = drawn + np.where(count > j, syllables[j], "")
        words.update(dict.fromkeys(drawn.tolist()))
        words.pop("a", None), words.pop("o", None)
    words = list(words)[:n - 2]
    noisy_length = np.fromiter(map(len, words), float, len(words)) + rng.normal(0, 1.5, len(words))
    # One-letter words at the top, so the a_/o_ files of the 2012 index exist.
    return ["a", "o"] + [words[i] for i in np.argsort(noisy_length, kind="stable")]


def _unicode_word(word: str, script: int, pick) -> str:
    """``word`` in accented Latin, Cyrillic or Greek, or 1-3 CJK ideographs (script 0..3)."""
    if script == 0:
        i = next((i for i, ch in enumerate(word) if ch in _ACCENTS), None)
        if i is None:
            return word + "é"
        options = _ACCENTS[word[i]]
        return word[:i] + options[pick[0] % len(options)] + word[i + 1:]
    if script == 1:
        return "".join(_CYRILLIC.get(ch, ch) for ch in word)
    if script == 2:
        greek = "".join(_GREEK.get(ch, ch) for ch in word)
        return greek[:-1] + "ς" if greek.endswith("σ") else greek
    return "".join(chr(0x4E00 + p % 0x51A0) for p in pick[: 1 + pick[1] % 3])


def _number(kind: int, pick) -> str:
    a, b = pick[0] % 1000, pick[1] % 1000
    return (str(a % 100), str(FIRST_YEAR + a % (LAST_YEAR - FIRST_YEAR + 1)), f"{a % 100}.{b % 10}",
            f"{a % 99 + 1},{b:03d}", f"{a % 30 + 1}th")[kind]


def _vocabulary(rng, n_base: int) -> tuple[list[str], np.ndarray]:
    """Distinct tokens in descending popularity, with their expected match count in LAST_YEAR."""
    tokens, lam, seen = [], [], set()

    def add(token, expected):
        if token not in seen:
            seen.add(token)
            tokens.append(token)
            lam.append(expected)

    for token, expected in _SPECIALS:
        add(token, expected)
    words = _base_words(rng, n_base)
    # The words are a sample of a much larger Zipf vocabulary: every rank at the
    # top, then log-uniformly spaced ranks, so a small corpus still has the long
    # tail of rare words (short, sparse, recent series) that dominates the real one.
    i = np.arange(n_base)
    rank = i + 30 * ((max(1e6, 20.0 * n_base) / 30) ** (i / n_base) - 1)
    zipf = _TOP_MATCH / (rank + 3) ** 1.05 * rng.lognormal(0, 0.25, n_base)
    u = rng.random((n_base, 6)).tolist()
    picks = rng.integers(0, 1 << 30, (n_base, 3)).tolist()
    tag = rng.integers(0, len(_WORD_TAGS), (n_base, 2)).tolist()
    for r, (word, expected, (kind, script, cap, cap_share, tagged, tag_share), pick) in enumerate(
            zip(words, zipf.tolist(), u, picks)):
        is_number = False
        if r >= 20:  # the most frequent words stay plain
            if kind < 0.06:
                word = _unicode_word(word, int(script * 4), pick)
            elif kind < 0.09:
                word, is_number = _number(int(script * 5), pick), True
            elif kind < 0.095:
                while len(word) < 25:
                    word += words[pick[2] % n_base]
                    pick[2] //= 7
        add(word, expected)
        if cap < (0.6 if r < 30 else 0.08):
            add(word.capitalize() if cap > 0.01 else word.upper(), expected * (0.02 + 0.4 * cap_share))
        if tagged < (0.9 if r < 100 else 0.2):
            tags = ["NUM"] if is_number else [_WORD_TAGS[t] for t in tag[r][: 1 + (tagged < 0.05)]]
            for t in tags:
                add(f"{word}_{t}", expected * (0.1 + 0.8 * tag_share))
    return tokens, np.array(lam)


# ---------------------------------------------------------------- n-gram tables


@dataclass
class _Table:
    """One order's n-grams (rows of token ids) and their per-n-gram parameters."""

    ids: np.ndarray  # (G, n) int32 token ids
    lam: np.ndarray  # expected match count in LAST_YEAR
    first: np.ndarray  # earliest possible year
    k: np.ndarray  # number of years with a row
    ratio: np.ndarray  # volume_count / match_count scale

    def take(self, sel) -> "_Table":
        return _Table(*(a[sel] for a in dataclasses.astuple(self)))

    def extend(self, other: "_Table") -> "_Table":
        pairs = zip(dataclasses.astuple(self), dataclasses.astuple(other))
        return _Table(*(np.concatenate(pair) for pair in pairs))


def _parameters(rng, ids, lam, order, budget) -> _Table:
    """Year span, density and volume ratio of each n-gram; frequent n-grams are older, denser
    and spread over relatively fewer volumes per match.

    No n-gram takes more than 0.5% of its order's row ``budget``, so a small
    corpus still has many n-grams (the frequent ones just get sparser series).
    """
    q = np.clip(np.log10(np.maximum(lam, 1.0)) / np.log10(_TOP_MATCH), 0, 1)
    age = np.minimum((rng.beta(1.0, 1.5 + 4.0 * (1 - q)) * (LAST_YEAR - FIRST_YEAR + 1)).astype(np.int64),
                     LAST_YEAR - FIRST_YEAR)
    dense = q ** 6
    density = dense + (1 - dense) * rng.beta(0.6, _DENSITY_B[order], len(q))
    k = np.minimum(1 + (age * density).astype(np.int64), max(4, budget // 200))
    ratio = 10.0 ** -(rng.random(len(q)) + 3.0 * q)
    return _Table(ids, lam, LAST_YEAR - age, k, ratio)


def _unique_new(old_ids, cand) -> np.ndarray:
    """Indices into ``cand`` of rows seen neither in ``old_ids`` nor earlier in ``cand``."""
    both = np.ascontiguousarray(np.concatenate([old_ids, cand]))
    keys = both.view(np.dtype((np.void, both.dtype.itemsize * both.shape[1]))).ravel()
    _, first = np.unique(keys, return_index=True)
    first.sort()
    return first[first >= len(old_ids)] - len(old_ids)


def _cut(table: _Table, budget: int, keep: int = 0) -> _Table:
    """The shortest prefix of ``table`` (of at least ``keep`` n-grams) holding ``budget`` rows, or all of it."""
    end = int(np.searchsorted(np.cumsum(table.k), budget)) + 1
    return table.take(slice(0, max(end, keep)))


def _unigrams(seed, budget) -> tuple[list[str], _Table]:
    """The 1-gram table, whose tokens are the vocabulary of every order.

    The vocabulary is regenerated from the same seed at a better size until its
    rows just exceed ``budget``, so the cut drops only a little of the rare tail.
    The special tokens always stay, even when they alone exceed a tiny budget.
    """
    n_base, attempts = budget // 25 + 50, 0
    while True:
        rng = np.random.default_rng([seed, 1])
        tokens, lam = _vocabulary(rng, n_base)
        table = _parameters(rng, np.arange(len(tokens), dtype=np.int32)[:, None], lam, 1, budget)
        total, attempts = int(table.k.sum()), attempts + 1
        if total >= budget and (total <= 1.1 * budget or attempts > 6):
            table = _cut(table, budget, keep=len(_SPECIALS))
            return tokens[: len(table.k)], table
        scaled = max(1, round(n_base * 1.05 * budget / total))
        n_base = max(scaled, n_base + 1) if total < budget else scaled


def _higher(seed, order, budget, tokens, tables) -> _Table:
    """Distinct n-grams of ``order`` >= 2 until they hold ``budget`` rows (or stop appearing).

    2-grams draw tokens by popularity; longer n-grams extend an (n-1)-gram by a
    2-gram that starts with its last token. ``_START_`` only begins and ``_END_``
    only ends an n-gram.
    """
    rng = np.random.default_rng([seed, 2, order])
    unigrams = tables[1]
    log_lam, log_total = np.log(unigrams.lam), np.log(unigrams.lam.sum())
    weight = unigrams.lam ** 0.8  # flatter than Zipf, so rare words get into n-grams too
    weight[[tokens.index(w) for w in WILDCARDS]] *= 0.02
    start_id, end_id = tokens.index(START), tokens.index(END)
    weight[[start_id, end_id]] = 0
    cdf = np.cumsum(weight) / weight.sum()

    def words(m):
        return np.minimum(np.searchsorted(cdf, rng.random(m)), len(cdf) - 1).astype(np.int32)

    if order > 2:
        prefixes = tables[order - 1]
        p_cdf = np.cumsum(np.where(prefixes.ids[:, -1] == end_id, 0, prefixes.lam))
        bigrams = tables[2]
        by_first = np.argsort(bigrams.ids[:, 0], kind="stable")
        b_cdf = np.cumsum(bigrams.lam[by_first])
        lo = np.searchsorted(bigrams.ids[by_first, 0], np.arange(len(tokens)), "left")
        hi = np.searchsorted(bigrams.ids[by_first, 0], np.arange(len(tokens)), "right")

    def draw(m):
        if order == 2:
            ids = np.stack([words(m), words(m)], axis=1)
            edge = rng.random(m)
            ids[edge < 0.06, 0] = start_id
            ids[(edge >= 0.06) & (edge < 0.12), 1] = end_id
            return ids
        pick = np.searchsorted(p_cdf, rng.random(m) * p_cdf[-1], "right")
        head = prefixes.ids[np.minimum(pick, len(p_cdf) - 1)]
        last = head[:, -1]
        lo_c = np.where(lo[last] > 0, b_cdf[lo[last] - 1], 0.0)
        hi_c = np.where(hi[last] > 0, b_cdf[hi[last] - 1], 0.0)
        succ = np.searchsorted(b_cdf, lo_c + rng.random(m) * (hi_c - lo_c), "right")
        has = hi[last] > lo[last]
        succ = by_first[np.where(has, np.clip(succ, lo[last], hi[last] - 1), 0)]
        # A token no 2-gram continues is followed by a popular token instead.
        tail = np.where(has, bigrams.ids[succ, 1], words(m))
        return np.concatenate([head, tail[:, None]], axis=1)

    table = _parameters(rng, np.empty((0, order), np.int32), np.empty(0), order, budget)
    m = max(64, 2 * budget // 8)
    while True:
        cand = draw(m)
        new = cand[_unique_new(table.ids, cand)]
        # Independent-token frequency times a heavy-tailed association factor,
        # never above half the rarest token's frequency.
        association = rng.normal(-1.0, 1.5, len(new)) * np.sqrt(order - 1)
        lam = np.exp(np.minimum(log_lam[new].sum(axis=1) - (order - 1) * log_total + association,
                                log_lam[new].min(axis=1) - np.log(2)))
        table = table.extend(_parameters(rng, new, lam, order, budget))
        if table.k.sum() >= budget or len(new) < m // 100:  # enough, or no new n-grams to be had
            return _cut(table, budget)
        m *= 2


# ---------------------------------------------------------------- rows


def _rows(rng, t: _Table, min_total: int):
    """Years, match and volume counts of every row of ``t``'s n-grams, in n-gram then year order."""
    g, total = len(t.k), int(t.k.sum())
    # k sorted uniforms per n-gram from normalised cumulative exponential spacings.
    spacing = np.cumsum(rng.standard_exponential(total + g))
    ends = np.cumsum(t.k + 1) - 1
    before = np.concatenate(([0.0], spacing[ends[:-1]]))
    group = np.repeat(np.arange(g), t.k + 1)
    u = (spacing - before[group]) / (spacing[ends] - before)[group]
    keep = np.ones(total + g, bool)
    keep[ends] = False
    u, group = u[keep], group[keep]
    starts = np.cumsum(t.k) - t.k
    pos = np.arange(total) - starts[group]
    # Nondecreasing offsets in [0, span - k] plus the position give k distinct years.
    room = (LAST_YEAR - t.first + 1 - t.k)[group]
    year = t.first[group] + np.minimum((u * (room + 1)).astype(np.int64), room) + pos

    expected = t.lam[group] * np.exp((year - LAST_YEAR) / _GROWTH_YEARS)
    match = 1 + (expected * rng.lognormal(0, 1.0, total)).astype(np.int64)
    if min_total:
        deficit = np.maximum(min_total - np.add.reduceat(match, starts), 0)
        match += np.repeat(-(-deficit // t.k), t.k)
    volume = 1 + ((match - 1) * t.ratio[group] * rng.uniform(0.3, 1.0, total)).astype(np.int64)
    return year, match, volume


# ---------------------------------------------------------------- output


class _Sink:
    """One gzip data file, opened on first flush; counts its lines for the malformed record."""

    def __init__(self, root: str, rel: str):
        self.rel, self.path, self.lines = rel, os.path.join(root, rel), 0
        self._raw = self._gz = None
        self._buf, self._size = [], 0

    def write(self, text: str, lines: int) -> None:
        data = text.encode("utf-8", "surrogateescape")  # lone surrogates carry invalid bytes
        self._buf.append(data)
        self._size += len(data)
        self.lines += lines
        if self._size >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._gz is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._raw = open(self.path, "wb")
            self._gz = igzip.GzipFile(fileobj=self._raw, mode="wb", mtime=0, filename="",
                                      compresslevel=_GZIP_LEVEL)
        self._gz.write(b"".join(self._buf))
        self._buf, self._size = [], 0

    def close(self) -> None:
        self._flush()
        self._gz.close()
        self._raw.close()


def _bad_line(kind: str, fmt: str, ngram: str, year: int, match: int, volume: int, variant: int) -> str:
    """A malformed line of ``kind`` built around a real n-gram, in the 2012 or 2020 layout."""
    ng, counts = ngram, (f"{year}\t{match}\t{volume}" if fmt == "2012" else f"{year},{match},{volume}")
    if kind == "field_count":
        counts = f"{year}\t{match}" if fmt == "2012" else None
    elif kind == "non_numeric":
        counts = f"{year}\t{match}x\t{volume}" if fmt == "2012" else f"{year},{match}x,{volume}"
    elif kind == "negative_count":
        counts = f"{year}\t-{match}\t{volume}" if fmt == "2012" else f"{year},-{match},{volume}"
    elif kind == "year_out_of_range":
        counts = str((1399, 2101)[variant % 2]) + counts[4:]
    elif kind == "empty_ngram":
        ng = ""
    elif kind == "too_many_tokens":
        ng = " ".join((ngram.split(" ") * 6)[:6])
    elif kind == "invalid_utf8":
        ng = ngram + "\udcff\udcfe"  # encoded as the bytes FF FE
    elif kind == "bad_year_tuple":  # a 2020 row with a two-field tuple: valid in neither format
        counts = f"{year},{match},{volume}\t{year + 1},{match}"
    return ng + "\n" if counts is None else f"{ng}\t{counts}\n"


def _write_order(out_dir, order, tokens, table, *, formats, lang, shards, bad, rng, min_total, report,
                 totals, progress, done, rows_total):
    """Sort ``table`` by n-gram, generate its rows chunk by chunk and write them in both formats.

    ``bad`` maps an n-gram position (in sorted order) to the malformed specs
    inserted just before that n-gram's line(s).
    """
    vocab = np.array(tokens, dtype=object)
    strings = vocab[table.ids[:, 0]]
    for j in range(1, order):
        strings = strings + " " + vocab[table.ids[:, j]]
    listed = strings.tolist()
    sort = np.array(sorted(range(len(listed)), key=listed.__getitem__), dtype=np.int64)
    t, strings = table.take(sort), strings[sort]

    firsts = np.unique(t.ids[:, 0])
    index = [index_2012(tokens[i], order) for i in firsts.tolist()]
    names = sorted(set(index))
    token_file = np.zeros(len(tokens), np.int64)
    token_file[firsts] = [names.index(name) for name in index]
    row_end = np.cumsum(t.k)
    file_of = {
        "2012": token_file[t.ids[:, 0]],
        # Range partition: each shard gets a contiguous run of about rows/N rows.
        "2020": ((row_end - t.k) * shards // max(int(row_end[-1]), 1)).astype(np.int64),
    }
    path_of = {
        "2012": lambda i: f"2012/googlebooks-{lang}-all-{order}gram-20120701-{names[i]}.gz",
        "2020": lambda i: f"2020/{lang}/{order}-{i:05d}-of-{shards:05d}.gz",
    }
    sinks = {fmt: {} for fmt in formats}
    if "2020" in formats:  # every shard exists, even an empty one
        sinks["2020"] = {i: _Sink(out_dir, path_of["2020"](i)) for i in range(shards)}
    sum_match = np.zeros(LAST_YEAR - FIRST_YEAR + 1, np.int64)
    max_volume = np.zeros_like(sum_match)

    cuts = np.searchsorted(row_end, np.arange(_CHUNK_ROWS, int(row_end[-1]), _CHUNK_ROWS), "left") + 1
    bounds = np.unique(np.concatenate(([0], cuts, [len(t.k)]))).tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        chunk = t.take(slice(a, b))
        year, match, volume = _rows(rng, chunk, min_total)
        np.add.at(sum_match, year - FIRST_YEAR, match)
        np.maximum.at(max_volume, year - FIRST_YEAR, volume)
        ys, ms, vs = year.tolist(), match.tolist(), volume.tolist()
        ngs = strings[a:b].tolist()
        # Row offsets of each n-gram of the chunk (2012 lines), plus the end.
        offsets = np.concatenate(([0], np.cumsum(chunk.k))).tolist()
        lines = {}
        if "2012" in formats:
            per_row = np.repeat(strings[a:b], chunk.k).tolist()
            lines["2012"] = [f"{n}\t{y}\t{m}\t{v}\n" for n, y, m, v in zip(per_row, ys, ms, vs)]
        if "2020" in formats:
            cells = [f"{y},{m},{v}" for y, m, v in zip(ys, ms, vs)]
            lines["2020"] = [f"{n}\t" + "\t".join(cells[offsets[i]:offsets[i + 1]]) + "\n"
                             for i, n in enumerate(ngs)]
        for fmt in formats:
            ids = file_of[fmt][a:b]
            # Runs of n-grams going to one file, also split where a malformed line goes in.
            breaks = set((np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist()) | {g - a for g in bad if a <= g < b}
            runs = sorted(breaks | {0}) + [b - a]
            for s, e in zip(runs[:-1], runs[1:]):
                fid = int(ids[s])
                if fid not in sinks[fmt]:
                    sinks[fmt][fid] = _Sink(out_dir, path_of[fmt](fid))
                sink = sinks[fmt][fid]
                for kind, variant, y, m, v in bad.get(a + s, ()):
                    sink.write(_bad_line(kind, fmt, ngs[s], y, m, v, variant), 1)
                    report.malformed.append({"file": sink.rel, "line": sink.lines, "kind": kind})
                lo, hi = (offsets[s], offsets[e]) if fmt == "2012" else (s, e)
                sink.write("".join(lines[fmt][lo:hi]), hi - lo)
        done += offsets[-1]
        if progress:
            progress(done, rows_total)
    for fmt_sinks in sinks.values():
        for sink in fmt_sinks.values():
            sink.close()
            report.files.append(sink.rel)
    totals[order] = (sum_match, max_volume)
    return done


def _write_totals(out_dir, lang, formats, totals):
    def line(cells):
        return "".join("\t" + ",".join(map(str, c)) for c in cells) + "\n"

    years = np.arange(FIRST_YEAR, LAST_YEAR + 1)
    if "2020" in formats:
        for order, (match, volume) in totals.items():
            with open(os.path.join(out_dir, "2020", lang, f"totalcounts-{order}"), "w") as fh:
                fh.write(line(zip(years[match > 0], match[match > 0], volume[match > 0])))
    if "2012" in formats:
        match = np.max([m for m, _ in totals.values()], axis=0)
        volume = np.max([v for _, v in totals.values()], axis=0)
        page = volume + (match - volume) // 3
        keep = match > 0
        with open(os.path.join(out_dir, "2012", f"googlebooks-{lang}-all-totalcounts-20120701.txt"), "w") as fh:
            fh.write(line(zip(years[keep], match[keep], page[keep], volume[keep])))


def _clear(out_dir, lang):
    """Delete what an earlier run wrote into ``out_dir`` (only files named as this module names them),
    so a smaller or different corpus never mixes with stale files."""
    shard = "[0-9]" * 5
    patterns = [f"2012/googlebooks-{lang}-all-*gram-20120701-*.gz",
                f"2012/googlebooks-{lang}-all-totalcounts-20120701.txt",
                f"2020/{lang}/[1-5]-{shard}-of-{shard}.gz",
                f"2020/{lang}/totalcounts-[1-5]", "corpus.json"]
    for pattern in patterns:
        for path in glob.glob(os.path.join(glob.escape(out_dir), pattern)):
            os.remove(path)


def generate(out_dir, *, rows=200_000, seed=0, orders=(1, 2, 3), formats=("2012", "2020"), files_per_order=4,
             malformed=0, min_total=40, lang="eng", progress=None) -> CorpusReport:
    """Write a synthetic corpus of about ``rows`` 2012-format rows over ``orders`` into ``out_dir``.

    ``formats``: any of "2012", "2020". ``files_per_order``: shards N of each
    2020 order (2012 files follow Google's index rule). ``malformed``: bad
    lines inserted per format. ``min_total``: least total match count of an
    n-gram (0 disables). ``progress(rows_done, rows_total)`` is called after
    each chunk. The same arguments always give byte-identical files.
    """
    orders = sorted(set(orders))
    formats = tuple(f for f in ("2012", "2020") if f in formats)
    if not orders or orders[0] < 1 or orders[-1] > MAX_ORDER:
        raise ValueError(f"orders must be within 1..{MAX_ORDER}: {orders}")
    if not formats or files_per_order < 1 or rows < 1 or malformed < 0 or min_total < 0:
        raise ValueError("need a format, files_per_order >= 1, rows >= 1, malformed >= 0, min_total >= 0")
    out_dir = str(out_dir)
    _clear(out_dir, lang)
    share = sum(_ROW_SHARE[n] for n in orders)
    budget = {n: max(1, round(rows * _ROW_SHARE[n] / share)) for n in range(1, orders[-1] + 1)}

    # Lower orders are built even when not written: they are the vocabulary and the chain links.
    tokens, unigrams = _unigrams(seed, budget[1])
    tables = {1: unigrams}
    for n in range(2, orders[-1] + 1):
        tables[n] = _higher(seed, n, budget[n], tokens, tables)

    bad_rng = np.random.default_rng([seed, 4])
    weights = np.array([tables[n].k.sum() for n in orders], float)
    bad = {n: {} for n in orders}
    for i in range(malformed):
        n = int(bad_rng.choice(orders, p=weights / weights.sum()))
        g = int(bad_rng.integers(len(tables[n].k)))
        year = int(bad_rng.integers(1800, LAST_YEAR))
        match = int(bad_rng.integers(1, 1000))
        spec = (MALFORMED_KINDS[i % len(MALFORMED_KINDS)], i // len(MALFORMED_KINDS), year, match,
                int(bad_rng.integers(1, match + 1)))
        bad[n].setdefault(g, []).append(spec)

    report = CorpusReport(out_dir, seed, int(sum(tables[n].k.sum() for n in orders)),
                          {n: len(tables[n].k) for n in orders}, [], [])
    os.makedirs(out_dir, exist_ok=True)
    totals, done = {}, 0
    for n in orders:
        done = _write_order(out_dir, n, tokens, tables[n], formats=formats, lang=lang, shards=files_per_order,
                            bad=bad[n], rng=np.random.default_rng([seed, 3, n]), min_total=min_total,
                            report=report, totals=totals, progress=progress, done=done,
                            rows_total=report.rows_2012)
    _write_totals(out_dir, lang, formats, totals)
    report.files.sort()
    report.malformed.sort(key=lambda m: (m["file"], m["line"]))
    with open(os.path.join(out_dir, "corpus.json"), "w") as fh:
        json.dump(dataclasses.asdict(report), fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return report


# ---------------------------------------------------------------- command line


def _orders(text: str) -> tuple[int, ...]:
    try:
        orders = tuple(sorted({int(x) for x in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of orders: {text!r}") from None
    if not orders or orders[0] < 1 or orders[-1] > MAX_ORDER:
        raise argparse.ArgumentTypeError(f"orders must be within 1..{MAX_ORDER}: {text!r}")
    return orders


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}: {value}")
        return value
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``sample-corpus`` options; the caller adds the output directory as ``output``."""
    # "%(default)s" in the help text also keeps ArgumentDefaultsHelpFormatter from repeating it.
    parser.add_argument("--rows", type=_at_least(1), default=200_000, metavar="N",
                        help="approximate number of 2012-format (n-gram, year) rows over all orders "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="random seed; the same options give the same bytes (default: %(default)s)")
    parser.add_argument("--orders", type=_orders, default="1,2,3", metavar="LIST",
                        help="comma-separated n-gram orders to write, 1..5 (default: %(default)s)")
    parser.add_argument("--format", choices=("2012", "2020", "both"), default="both",
                        help="file format(s) to write (default: %(default)s)")
    parser.add_argument("--files-per-order", type=_at_least(1), default=4, metavar="N",
                        help="shards per order in the 2020 format; 2012 files follow Google's index rule "
                             "(default: %(default)s)")
    parser.add_argument("--malformed", type=_at_least(0), default=0, metavar="K",
                        help="malformed lines to insert per format, listed in corpus.json "
                             "(default: %(default)s)")
    parser.add_argument("--min-total", type=_at_least(0), default=40, metavar="N",
                        help="least total match count of every n-gram, Google's publication threshold; "
                             "0 disables (default: %(default)s)")


def run(args) -> CorpusReport:
    """Generate the corpus ``args`` describe and print a one-paragraph summary."""
    started = time.perf_counter()
    report = generate(args.output, rows=args.rows, seed=args.seed, orders=args.orders,
                      formats=("2012", "2020") if args.format == "both" else (args.format,),
                      files_per_order=args.files_per_order, malformed=args.malformed,
                      min_total=args.min_total, lang=getattr(args, "lang", "eng"))
    seconds = time.perf_counter() - started
    per_order = ", ".join(f"{count} {n}-grams" for n, count in report.ngrams.items())
    threshold = f"every n-gram totalling at least {args.min_total}" if args.min_total else "no total threshold"
    print(f"Wrote a synthetic corpus to {report.out_dir}: {report.rows_2012} 2012-format rows ({per_order}) "
          f"in {len(report.files)} data files ({args.format} format{'s' if args.format == 'both' else ''}), "
          f"seed {report.seed}, {threshold}; "
          f"{args.malformed} malformed lines per format, listed with their line numbers in corpus.json; "
          f"{seconds:.1f} s ({report.rows_2012 / max(seconds, 1e-9):,.0f} rows/s).")
    return report
