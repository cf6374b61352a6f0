"""Exact file lists of Google's public Ngram exports, and ``corpus:`` specs.

Two exports are catalogued:

* ``20120701`` ("v2"): ``{BASE}googlebooks-{lang}-all-{n}gram-20120701-{index}.gz``
  with ``BASE = https://storage.googleapis.com/books/ngrams/books/``; per-year
  totals in ``googlebooks-{lang}-all-totalcounts-20120701.txt``.
* ``20200217`` ("v3"): ``{BASE}20200217/{lang}/{n}-{i:05d}-of-{N:05d}.gz``;
  per-year totals in ``{BASE}20200217/{lang}/totalcounts-{n}``.

Corpus spec syntax (what ``ngramflow import`` and ``corpus download`` accept)::

    corpus:VERSION/LANG/ORDER[/SELECTION]

VERSION is ``20120701`` or ``20200217``; LANG a corpus code such as ``eng``,
``eng-us``, ``chi_sim`` (``chi-sim`` and ``chi_sim`` are accepted for either
version and spelled as Google spelled them in that version); ORDER is 1..5.
Without SELECTION the spec means every data file of that order (not the
totals). SELECTION is a comma-separated list of items, each one of:

* an index key: for 2012 the file suffix (``ab``, ``a_``, ``_NOUN_``,
  ``other``, ``punctuation``, ``pos``, ``7``); for 2020 the shard number
  (``17`` or ``00017``);
* a shard range ``FIRST-LAST`` (2020 only, inclusive, e.g. ``0-99``);
* a glob (``*``, ``?``, ``[...]``) matched against the key and the file name,
  e.g. ``a*`` or ``*-00001-of-*``;
* ``totalcounts``: the per-year totals file that belongs to this export.

An item that matches nothing is an error, so a typo never silently shrinks a
download. Examples: ``corpus:20120701/eng/2/a_,ab``,
``corpus:20120701/eng/2/_*_,totalcounts``, ``corpus:20200217/eng/3/0-9``.
"""

from __future__ import annotations

import fnmatch
import html.parser
import itertools
import posixpath
import re
import string
import urllib.parse
from dataclasses import dataclass

# https: a download over plain http could be altered on the way (for .gz the
# gzip CRC only detects damage, not a consistent replacement).
BASE_URL = "https://storage.googleapis.com/books/ngrams/books/"
V2012 = "20120701"
V2020 = "20200217"
VERSIONS = (V2012, V2020)
ORDERS = range(1, 6)
SPEC_PREFIX = "corpus:"

#: Corpus codes per version. Google spelled simplified Chinese differently in the two exports.
LANGUAGES = {
    V2012: ("eng", "eng-us", "eng-gb", "eng-fiction", "chi-sim", "fre", "ger", "heb", "ita", "rus", "spa"),
    V2020: ("eng", "eng-us", "eng-gb", "eng-fiction", "chi_sim", "fre", "ger", "heb", "ita", "rus", "spa"),
}

#: The names of the two exports' n-gram files, which Google publishes sorted by n-gram, no n-gram in two.
_EXPORT_NAMES = re.compile(rf"(googlebooks-[a-z_-]+-all-[1-5]gram-{V2012}-[^/]+|[1-5]-\d{{5}}-of-\d{{5}})\.gz")


def is_export_file(path: str) -> bool:
    """Whether PATH is named as one of the exports' n-gram files."""
    return _EXPORT_NAMES.fullmatch(path.rsplit("/", 1)[-1]) is not None


_POS_FILES = ("_ADJ_", "_ADP_", "_ADV_", "_CONJ_", "_DET_", "_NOUN_", "_NUM_", "_PRON_", "_PRT_", "_VERB_")

# Index names Google never published although the naming scheme implies them.
# Source: dimazest/google-ngram-downloader (util.get_indices and its tests),
# which downloads every English 2012 file and asserts HTTP 200 for each.
_MISSING_2012 = {("eng", 5): frozenset({"qk"})}

# Shard counts N of the 2020 export, per (lang, order): the number of
# "{n}-*-of-N.gz" links on Google's per-language index pages
# ({BASE}20200217/{lang}/{lang}-{n}-ngrams_exports.html), as recorded in the
# link lists under source-data/ of orgtre/google-books-ngram-frequency (2023).
# Every list there is complete and contiguous (0..N-1, all naming the same N);
# English 2- and 3-grams agree with DOMAIN.md (589, 6881).
_SHARDS_2020 = {
    "eng": (24, 589, 6881, 6668, 19423),
    "eng-us": (14, 365, 4178, 3936, 11145),
    "eng-gb": (4, 118, 1283, 1154, 3098),
    "eng-fiction": (1, 47, 549, 515, 1449),
    "chi_sim": (1, 6, 59, 46, 105),
    "fre": (6, 115, 1197, 1104, 3071),
    "ger": (8, 181, 1369, 1003, 2262),
    "heb": (1, 10, 45, 25, 42),
    "ita": (2, 60, 553, 427, 984),
    "rus": (2, 69, 471, 313, 633),
    "spa": (3, 73, 688, 571, 1415),
}


class CatalogError(ValueError):
    """A version, language, order or spec the catalog cannot answer."""


@dataclass(frozen=True)
class CorpusFile:
    name: str  # file name as Google publishes it
    url: str
    order: int
    version: str
    lang: str
    key: str  # 2012: index suffix ("ab", "_NOUN_"); 2020: shard number; "totalcounts"


def list_files(version: str, lang: str, order: int, base_url: str = BASE_URL) -> list[CorpusFile]:
    """Every data file of one export, language and order, in Google's order.

    ``base_url`` (ending in ``/``) points the URLs at a mirror laid out like
    Google's bucket.
    """
    version, lang, order = _check(version, lang, order)
    if version == V2012:
        missing = _MISSING_2012.get((lang, order), frozenset())
        return [_file_2012(base_url, lang, order, key) for key in _indices_2012(order) if key not in missing]
    count = _SHARDS_2020[lang][order - 1]
    return [_file_2020(base_url, lang, order, i, count) for i in range(count)]


def totalcounts_file(version: str, lang: str, order: int, base_url: str = BASE_URL) -> CorpusFile:
    """The per-year totals that belong to these data files."""
    version, lang, order = _check(version, lang, order)
    if version == V2012:
        name = f"googlebooks-{lang}-all-totalcounts-{V2012}.txt"
        url = base_url + name
    else:
        name = f"totalcounts-{order}"
        url = f"{base_url}{V2020}/{lang}/{name}"
    return CorpusFile(name, url, order, version, lang, "totalcounts")


def listing_caveat(version: str, lang: str, order: int) -> str | None:
    """Why a listing may name files that do not exist, or None when it is exact."""
    version, lang, _ = _check(version, lang, order)
    if version == V2012 and lang != "eng":
        return (
            f"the 2012 list for {lang} follows Google's naming scheme, but Google published no file "
            f"for a prefix without n-grams, so some of these names may not exist (HTTP 404). "
            f"For the exact list read Google's index page ({index_url(version, lang, order)}) with --from-index"
        )
    return None


def index_url(version: str, lang: str, order: int, base_url: str = BASE_URL) -> str:
    """Google's HTML page that links every file of this export."""
    version, lang, order = _check(version, lang, order)
    if version == V2012:
        return base_url + "datasetsv2.html"
    return f"{base_url}{V2020}/{lang}/{lang}-{order}-ngrams_exports.html"


def files_from_index(page: str, page_url: str, version: str, lang: str, order: int) -> list[CorpusFile]:
    """The data files of one export that an index page links, in page order.

    Only links whose file name fits this version, language and order count;
    relative links resolve against ``page_url``.
    """
    version, lang, order = _check(version, lang, order)
    if version == V2012:
        pattern = re.compile(rf"googlebooks-{re.escape(lang)}-all-{order}gram-{V2012}-(?P<key>[^/]+)\.gz")
    else:
        pattern = re.compile(rf"{order}-(?P<key>\d{{5}})-of-\d{{5}}\.gz")
    parser = _LinkParser()
    parser.feed(page)
    files, seen = [], set()
    for href in parser.links:
        url = urllib.parse.urljoin(page_url, href.strip())
        name = posixpath.basename(urllib.parse.urlsplit(url).path)
        match = pattern.fullmatch(name)
        # 2020 shards of every language share names, so the directory must match too.
        if not match or url in seen or (version == V2020 and f"/{V2020}/{lang}/" not in url):
            continue
        seen.add(url)
        key = match["key"] if version == V2012 else str(int(match["key"]))
        files.append(CorpusFile(name, url, order, version, lang, key))
    if not files:
        raise CatalogError(f"{page_url} links no {version} {lang} {order}-gram files")
    return files


@dataclass(frozen=True)
class CorpusSpec:
    version: str
    lang: str
    order: int
    selection: tuple[str, ...]  # empty: every data file

    def resolve(self, available: list[CorpusFile] | None = None, base_url: str = BASE_URL) -> list[CorpusFile]:
        """The files this spec names, in catalog order (totals last).

        ``available`` replaces the built-in listing, e.g. with
        :func:`files_from_index`.
        """
        files = list_files(self.version, self.lang, self.order, base_url) if available is None else available
        if not self.selection:
            return files
        wanted, want_totals = set(), False
        for item in self.selection:
            if item == "totalcounts":
                want_totals = True
                continue
            hits = {f.key for f in files if _item_matches(item, f, self.version)}
            if not hits:
                raise CatalogError(f"{self}: {item!r} matches no file")
            wanted |= hits
        chosen = [f for f in files if f.key in wanted]
        if want_totals:
            chosen.append(totalcounts_file(self.version, self.lang, self.order, base_url))
        return chosen

    def __str__(self) -> str:
        tail = "/" + ",".join(self.selection) if self.selection else ""
        return f"{SPEC_PREFIX}{self.version}/{self.lang}/{self.order}{tail}"


def is_corpus_spec(text: str) -> bool:
    return text.startswith(SPEC_PREFIX)


def parse_corpus_spec(text: str) -> CorpusSpec:
    """Parse ``corpus:VERSION/LANG/ORDER[/SELECTION]`` (see the module docstring)."""
    if not is_corpus_spec(text):
        raise CatalogError(f"{text!r} is not a corpus spec (corpus:VERSION/LANG/ORDER[/SELECTION])")
    parts = text[len(SPEC_PREFIX) :].split("/")
    if len(parts) not in (3, 4) or not all(parts[:3]):
        raise CatalogError(f"{text!r}: expected corpus:VERSION/LANG/ORDER[/SELECTION], "
                           "e.g. corpus:20120701/eng/2/a_,ab")
    if not parts[2].isdigit():
        raise CatalogError(f"{text!r}: ORDER must be a number 1..5, not {parts[2]!r}")
    version, lang, order = _check(parts[0], parts[1], int(parts[2]))
    selection = tuple(item.strip() for item in parts[3].split(",")) if len(parts) == 4 else ()
    if any(not item for item in selection):
        raise CatalogError(f"{text!r}: empty item in the selection")
    return CorpusSpec(version, lang, order, selection)


def _check(version: str, lang: str, order: int) -> tuple[str, str, int]:
    if version not in VERSIONS:
        raise CatalogError(f"unknown version {version!r}; the catalog knows {', '.join(VERSIONS)}")
    if lang == "eng-1M":
        raise CatalogError("eng-1M (English One Million) exists only in the 2009 export (20090715), "
                           "not in 2012 or 2020")
    spelled = lang.replace("_", "-") if version == V2012 else lang.replace("chi-sim", "chi_sim")
    if spelled not in LANGUAGES[version]:
        raise CatalogError(f"unknown language {lang!r} for {version}; known: {', '.join(LANGUAGES[version])}")
    if order not in ORDERS:
        raise CatalogError(f"order must be 1..5, not {order}")
    return version, spelled, order


def _indices_2012(order: int) -> list[str]:
    """The index suffixes of the 2012 naming scheme, sorted as Google lists them."""
    if order == 1:
        return sorted([*string.digits, *string.ascii_lowercase, "other", "pos", "punctuation"])
    pairs = ["".join(p) for p in itertools.product(string.ascii_lowercase, string.ascii_lowercase + "_")]
    return sorted([*string.digits, *_POS_FILES, *pairs, "other", "punctuation"])


def _file_2012(base_url: str, lang: str, order: int, key: str) -> CorpusFile:
    name = f"googlebooks-{lang}-all-{order}gram-{V2012}-{key}.gz"
    return CorpusFile(name, base_url + name, order, V2012, lang, key)


def _file_2020(base_url: str, lang: str, order: int, index: int, count: int) -> CorpusFile:
    name = f"{order}-{index:05d}-of-{count:05d}.gz"
    return CorpusFile(name, f"{base_url}{V2020}/{lang}/{name}", order, V2020, lang, str(index))


def _item_matches(item: str, f: CorpusFile, version: str) -> bool:
    if any(c in item for c in "*?["):
        return fnmatch.fnmatchcase(f.key, item) or fnmatch.fnmatchcase(f.name, item)
    if version == V2020:
        bounds = re.fullmatch(r"(\d+)-(\d+)", item)
        if bounds:
            return int(bounds[1]) <= int(f.key) <= int(bounds[2])
        return item.isdigit() and int(item) == int(f.key)
    return item == f.key


class _LinkParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.extend(value for name, value in attrs if name == "href" and value)
