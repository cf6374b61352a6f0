"""Cold-start latency of `ngramflow query` look-ups on a large dataset, against full scans.

    python -m benchmarks.lookup_latency DIR [--samples 20]

Every measurement is a fresh process (``python -m ngramflow.cli query ...``),
timed from start to exit, on n-grams sampled from the dataset. "Cold" runs
first drop the dataset's files from the OS page cache (posix_fadvise
DONTNEED on those files only; nothing else on the machine is touched), so the
look-up reads from disk; "warm" runs find them cached. Also reports, from
DuckDB's EXPLAIN ANALYZE, how many row groups and bytes a point look-up reads,
how long its query takes without the process around it, and how long a full
aggregate takes.
Prints a Markdown table.
"""

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import time

import duckdb

from ngramflow.query.dataset import Dataset
from ngramflow.query.lookups import count, count_query, parse_ngram

PY = sys.executable


def evict(dataset: str) -> None:
    for path in glob.glob(os.path.join(dataset, "**", "*.parquet"), recursive=True):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def sample(ds: Dataset, order: int, n: int) -> list[str]:
    return [r[0] for r in duckdb.sql(f"SELECT ngram FROM {ds.ngrams_of_order(order)} "
                                     f"USING SAMPLE {n} ROWS (reservoir, 7) ORDER BY ngram").fetchall()]


def timed(args: list[str], dataset: str, cold: bool) -> float:
    if cold:
        evict(dataset)
    started = time.perf_counter()
    subprocess.run([PY, "-m", "ngramflow.cli", "query", dataset, *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def query_seconds(ds: Dataset, ngrams: list[str]) -> float:
    """Median time of `count NGRAM`'s query alone, in a new connection, from a cold page cache."""
    times = []
    for ngram in ngrams:
        evict(ds.path)
        con = ds.connect()
        started = time.perf_counter()
        parsed = parse_ngram(ngram, ds.lowercase)
        count(con, ds.ngrams_of_order(parsed.order), parsed, False, ds.keep_years)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def aggregate_seconds(ds: Dataset) -> float:
    """Best of three cold runs of an aggregate over every n-gram file: what smaller row groups could slow."""
    times = []
    for _ in range(3):
        evict(ds.path)
        con = ds.connect(views=True)
        started = time.perf_counter()
        con.execute("SELECT sum(match_count), count(DISTINCT ngram) FROM ngrams").fetchall()
        times.append(time.perf_counter() - started)
    return min(times)


def scan_stats(ds: Dataset, ngram: str) -> tuple[str, str]:
    """(row groups scanned / in the order's files, data read) of `count NGRAM`'s query, from EXPLAIN ANALYZE."""
    source = ds.ngrams_of_order(parse_ngram(ngram, ds.lowercase).order)
    plan = ds.connect().execute("EXPLAIN ANALYZE " + count_query(source), [ngram]).fetchall()[0][1]
    groups = re.search(r"Row Groups Scanned: (\d+ / \d+)", plan).group(1)
    read = re.search(r"Data Read: +([\d.]+ \w+)", plan).group(1)
    return groups, read


def scenarios(ngrams: list[str]) -> list[tuple[str, callable]]:
    quoted = [n.replace("'", "''") for n in ngrams]
    return [
        ("start-up only: `count \"a b c d e\"` (an order the dataset lacks: no file read)",
         lambda i: ["count", "a b c d e"]),
        ("point look-up: `count NGRAM`", lambda i: ["count", ngrams[i]]),
        ("absent n-gram: `count NGRAM` (0)", lambda i: ["count", ngrams[i] + "q"]),
        ("series: `series NGRAM --normalize`", lambda i: ["series", ngrams[i], "--normalize"]),
        ("continuations: `next PREFIX`", lambda i: ["next", ngrams[i].rsplit(" ", 1)[0]]),
        ("scan of the order: `count NGRAM --ignore-case`", lambda i: ["count", ngrams[i], "--ignore-case"]),
        ("full scan: `sql \"... FROM ngrams WHERE lower(ngram) = ...\"`",
         lambda i: ["sql", f"SELECT ngram, match_count FROM ngrams WHERE lower(ngram) = lower('{quoted[i]}')"]),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lookup_latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", metavar="DIR")
    parser.add_argument("--samples", type=int, default=20, help="n-grams per scenario (half 2-grams, half 3-grams)")
    args = parser.parse_args(argv)
    ds = Dataset(args.dataset)
    ngrams = sample(ds, 2, args.samples // 2) + sample(ds, 3, args.samples - args.samples // 2)
    total = sum(o["ngrams"] for o in ds.manifest["orders"].values())
    groups, read = scan_stats(ds, ngrams[-1])
    print(f"{total:,} n-grams; a point look-up of a 3-gram scans {groups} row groups and reads {read}; "
          f"its query alone takes {query_seconds(ds, ngrams) * 1000:.0f} ms (median, cold); an aggregate over "
          f"all n-grams takes {aggregate_seconds(ds):.2f} s\n")
    print("| query (fresh process each) | warm: median | warm: max | cold: median | cold: max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, command in scenarios(ngrams):
        cells = []
        for cold in (False, True):
            times = [timed(command(i), args.dataset, cold) for i in range(len(ngrams))]
            cells += [f"{statistics.median(times):.2f} s", f"{max(times):.2f} s"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
