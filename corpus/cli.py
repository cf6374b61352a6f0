"""``corpus list`` and ``corpus download``: the corpus-acquisition commands.

Wiring into another argparse CLI::

    corpus_parser = add_corpus_commands(subparsers)
    args = parser.parse_args()
    ...
    return run(args)  # when args.command == "corpus"

``run`` turns user errors into a one-line message and exit code 2; ``main``
does the same for ``python -m ngramflow.corpus.cli list|download ...``. Exit codes: 0 success,
1 some download failed, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error

from ngramflow.corpus import catalog, download, queue

_SPEC_HELP = (
    "SPEC is corpus:VERSION/LANG/ORDER[/SELECTION], e.g. corpus:20120701/eng/2 (every 2012 English "
    "2-gram file), corpus:20120701/eng/2/a_,ab,_NOUN_ (those index files), corpus:20200217/eng/2/0-9 "
    "(shards 0..9), corpus:20200217/eng/3/*-0000?-of-* (a glob over file names); add the item "
    "'totalcounts' for the per-year totals. Versions: 20120701, 20200217. Languages: "
    + ", ".join(catalog.LANGUAGES[catalog.V2020])
    + " (chi_sim is also spelled chi-sim)."
)


_DESCRIPTION = "List and download the files of Google's public Ngram exports. " + _SPEC_HELP


class UsageError(Exception):
    """A mistake in the command line or spec; reported in one line, exit code 2."""


def add_corpus_commands(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``corpus list`` and ``corpus download`` under ``subparsers``; returns the ``corpus`` parser."""
    corpus = subparsers.add_parser(
        "corpus",
        help="list or download Google Books Ngram export files",
        description=_DESCRIPTION,
    )
    _add_commands(corpus)
    return corpus


def _add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="corpus_command", metavar="{list,download,publish}", required=True)

    lister = commands.add_parser(
        "list",
        help="print the files of one export, language and order",
        description="Print the files of one export, language and order (name and URL, one per line), "
        "from the built-in catalog or, with --from-index/--index-url, from Google's index page. " + _SPEC_HELP,
    )
    lister.add_argument("spec", nargs="?", metavar="SPEC",
                        help="a corpus spec to list instead of --version/--lang/--order")
    lister.add_argument("--version", choices=catalog.VERSIONS, help="export version (required without SPEC)")
    lister.add_argument("--lang", help="corpus language code, e.g. eng, eng-us, fre, chi_sim (required without SPEC)")
    lister.add_argument("--order", type=int, choices=catalog.ORDERS, help="n-gram order 1..5 (required without SPEC)")
    lister.add_argument("--urls-only", action="store_true", help="print only the URLs (default: name, TAB, URL)")
    _add_source_options(lister)
    lister.set_defaults(func=_cmd_list)

    fetcher = commands.add_parser(
        "download",
        help="download files into a local cache, resumably and verified",
        description="Download files into CACHE/HOST/PATH. Interrupted downloads resume from the bytes on disk; "
        "every file is checked (length, and the whole gzip stream for .gz) before it gets its final name; "
        "files already in the cache are not fetched again. A URL whose decoded path would not stay inside the "
        "cache is refused: one given on the command line is a usage error, one linked from an index page is "
        "reported failed while the other files are fetched. " + _SPEC_HELP,
        epilog="Progress shows on stderr only when it is a terminal, unless --progress or --no-progress.",
    )
    fetcher.add_argument("inputs", nargs="+", metavar="SPEC_OR_URL", help="corpus specs or http(s) URLs")
    fetcher.add_argument("--cache", required=True, metavar="DIR", help="cache directory (required)")
    fetcher.add_argument(
        "--parallel", type=_positive, default=download.PARALLEL, metavar="N",
        help="files fetched at once (default: %(default)s)"
    )
    fetcher.add_argument(
        "--retries",
        type=_non_negative,
        default=download.RETRIES,
        metavar="N",
        help="failed attempts in a row without progress allowed per file before it is reported failed; only "
        "more bytes of the file than it ever had count as progress, not a restart from byte 0 (default: %(default)s)",
    )
    fetcher.add_argument(
        "--retry-time",
        type=_positive_seconds,
        default=download.RETRY_TIME,
        metavar="SEC",
        help="seconds after a file's first failure when it is reported failed even if retries are left; "
        "its .part stays for the next run to resume (default: %(default)g)",
    )
    fetcher.add_argument(
        "--timeout",
        type=float,
        default=download.TIMEOUT,
        metavar="SEC",
        help="connect and read timeout in seconds (default: %(default)g)",
    )
    progress = fetcher.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", dest="progress", action="store_true", default=None, help="always show progress on stderr"
    )
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show progress")
    _add_source_options(fetcher)
    fetcher.add_argument("--publish", metavar="kafka://HOST:PORT/TOPIC",
                         help="publish each file to this Kafka topic once it is verified and in the cache, for "
                              "'ngramflow import --from-kafka' (see 'ngramflow corpus publish')")
    _add_end_option(fetcher)
    fetcher.set_defaults(func=_cmd_download)

    publisher = commands.add_parser(
        "publish",
        help="publish files already on disk to a Kafka topic for 'ngramflow import --from-kafka'",
        description="Publish one message per file (keyed by its name; its path, size, sha256, detected format "
        "and n-gram order) to a Kafka topic of one partition, created if missing. Publishing a file again is "
        "harmless: the import counts a name and checksum once, and refuses a name published with another "
        "checksum. The producer is idempotent.",
    )
    publisher.add_argument("paths", nargs="*", metavar="PATH",
                           help="files (local, or gs:// and s3:// URIs with Beam's extra for them), or local "
                                "folders whose .gz files (recursively) are published in name order; none with "
                                "--end-of-corpus publishes only the marker")
    publisher.add_argument("--to", required=True, metavar="kafka://HOST:PORT/TOPIC", help="the topic (required)")
    _add_end_option(publisher)
    publisher.set_defaults(func=_cmd_publish)


def _add_end_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--end-of-corpus", action="store_true",
                        help="then publish the end marker, which carries the number of distinct files published to "
                             "the topic; an import finishes once it has read that many. Files published after it "
                             "are not imported")


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mirror",
        default=catalog.BASE_URL,
        metavar="URL",
        help=f"base URL of a copy laid out like Google's bucket (default: {catalog.BASE_URL})",
    )
    parser.add_argument(
        "--from-index",
        action="store_true",
        help="take the file list from Google's published index page for the export (under --mirror) "
        "instead of the built-in catalog; needs network access (default: built-in catalog)",
    )
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="take the file list from this index page (implies --from-index; default: Google's page)",
    )


def run(args: argparse.Namespace) -> int:
    """Execute a parsed ``corpus`` command; user errors become exit code 2 and one line on stderr."""
    try:
        return args.func(args)
    except (UsageError, catalog.CatalogError) as e:
        print(f"ngramflow corpus: error: {e}", file=sys.stderr)
        return 2
    except urllib.error.URLError as e:
        print(f"ngramflow corpus: error: cannot read the index page: {getattr(e, 'reason', e)}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """``python -m ngramflow.corpus.cli list|download ...``: the same commands without the ``corpus`` level."""
    parser = argparse.ArgumentParser(prog="ngramflow corpus", description=_DESCRIPTION)
    _add_commands(parser)
    return run(parser.parse_args(argv))


def _cmd_list(args: argparse.Namespace) -> int:
    mirror = _mirror(args.mirror)
    if args.spec:
        if args.version or args.lang or args.order:
            raise UsageError("give either SPEC or --version/--lang/--order, not both")
        spec = args.spec
    else:
        missing = [opt for opt in ("version", "lang", "order") if getattr(args, opt) is None]
        if missing:
            raise UsageError(f"missing {', '.join('--' + m for m in missing)} (or give a SPEC)")
        spec = f"{catalog.SPEC_PREFIX}{args.version}/{args.lang}/{args.order}"
    parsed = catalog.parse_corpus_spec(spec)
    files = download.expand_spec(spec, base_url=mirror, index_page=args.index_url, from_index=args.from_index)
    for f in files:
        print(f.url if args.urls_only else f"{f.name}\t{f.url}")
    if not (args.from_index or args.index_url):
        caveat = catalog.listing_caveat(parsed.version, parsed.lang, parsed.order)
        if caveat:
            print(f"note: {caveat}", file=sys.stderr)
    totals = catalog.totalcounts_file(parsed.version, parsed.lang, parsed.order, mirror)
    print(f"{len(files)} files; per-year totals: {totals.url} (select with the item 'totalcounts')", file=sys.stderr)
    return 0


def _cmd_download(args: argparse.Namespace) -> int:
    mirror = _mirror(args.mirror)
    target = queue.QueueAddress.parse(args.publish, "--publish") if args.publish else None
    if args.end_of_corpus and not target:
        raise UsageError("--end-of-corpus needs --publish")
    urls: list[str] = []
    for item in args.inputs:
        if catalog.is_corpus_spec(item):
            files = download.expand_spec(item, base_url=mirror, index_page=args.index_url, from_index=args.from_index)
            urls += [f.url for f in files]
        elif item.startswith(("http://", "https://")):
            download.cache_parts(item)  # a URL the cache cannot hold is a usage error, before any download
            urls.append(item)
        else:
            raise UsageError(f"{item!r} is neither a corpus spec (corpus:VERSION/LANG/ORDER[/SELECTION]) "
                             "nor an http(s) URL")
    publisher = queue.Publisher(target) if target else None
    report = download.download(
        urls,
        args.cache,
        parallel=args.parallel,
        retries=args.retries,
        retry_time=args.retry_time,
        timeout=args.timeout,
        progress=args.progress,
        on_cached=(lambda path: publisher.publish(queue.file_message(path))) if publisher else None,
    )
    print(report.summary(), file=sys.stderr)
    if publisher:
        publisher.close()
        cached = sum(1 for r in report.results if r.status != "failed")
        print(f"published {cached} file(s) to {target}", file=sys.stderr)
        if args.end_of_corpus:
            if not report.ok:
                print("the end-of-corpus marker is not published: some file failed", file=sys.stderr)
            else:
                _end(target)
    return 0 if report.ok else 1


def _end(target: "queue.QueueAddress") -> None:
    files = queue.publish_end(target)
    print(f"published the end of the corpus to {target}: {files} distinct file(s)", file=sys.stderr)


def _publish_paths(paths: list[str]) -> list[str]:
    files = []
    for path in paths:
        if "://" in path:  # gs:// or s3://, read through Beam's file systems
            files.append(path)
        elif os.path.isdir(path):
            files += sorted(os.path.join(root, name) for root, _, names in os.walk(path, followlinks=True)
                            for name in names if name.endswith(".gz"))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {path}")
    return files


def _cmd_publish(args: argparse.Namespace) -> int:
    target = queue.QueueAddress.parse(args.to, "--to")
    if not args.paths and not args.end_of_corpus:
        raise UsageError("nothing to publish: give PATH... or --end-of-corpus")
    files = _publish_paths(args.paths)
    publisher = queue.Publisher(target)
    for path in files:
        publisher.publish(queue.file_message(path))
    publisher.close()
    print(f"published {len(files)} file(s) to {target}", file=sys.stderr)
    if args.end_of_corpus:
        _end(target)
    return 0


def _mirror(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--mirror must be an http(s) URL, not {url!r}")
    return url if url.endswith("/") else url + "/"


def _positive(text: str) -> int:
    return _int_at_least(text, 1)


def _non_negative(text: str) -> int:
    return _int_at_least(text, 0)


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return seconds


def _int_at_least(text: str, low: int) -> int:
    if not text.isdigit() or int(text) < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}")
    return int(text)


if __name__ == "__main__":
    sys.exit(main())
