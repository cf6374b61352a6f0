"""Compare an ngramflow ARPA model with another one (e.g. KenLM lmplz's for the same text).

    python tools/compare_arpa.py OURS.arpa THEIRS.arpa [--tolerance 1e-4]
                                 [--dataset DIR --lmplz-log LOG [--discount-tolerance 1e-6]]

Checks that both files hold the same n-grams and that every log10 probability
and backoff agrees within the tolerance; with --dataset and --lmplz-log, also
that the discounts in DIR's manifest agree with the "Statistics:" lines lmplz
printed on stderr. Exits 1 on any difference.
"""

import argparse
import json
import os
import re
import sys

import duckdb


def _entries(path: str) -> str:
    """SQL: (ngram, log10 prob, log10 backoff or 0) of every entry line of an ARPA file."""
    return f"""(SELECT c2 AS ngram, c1::DOUBLE AS prob, coalesce(c3::DOUBLE, 0) AS backoff
               FROM read_csv('{path}', delim = '\t', header = false, quote = '', escape = '', null_padding = true,
                             auto_detect = false, columns = {{'c1': 'VARCHAR', 'c2': 'VARCHAR', 'c3': 'VARCHAR'}})
               WHERE c2 IS NOT NULL)"""


def compare_files(ours: str, theirs: str, tolerance: float = 1e-4, work: str | None = None) -> dict:
    """Entry counts, entries in one file only, the largest differences and entries beyond TOLERANCE of
    two ARPA files; joined by DuckDB, so memory stays bounded (it spills into WORK) at any size."""
    con = duckdb.connect(config={"memory_limit": "2GB", **({"temp_directory": work} if work else {})})
    row = con.execute(f"""
        SELECT count(o.ngram), count(t.ngram), count(*) FILTER (o.ngram IS NULL OR t.ngram IS NULL),
               coalesce(max(abs(o.prob - t.prob)), 0), coalesce(max(abs(o.backoff - t.backoff)), 0),
               count(*) FILTER (greatest(abs(o.prob - t.prob), abs(o.backoff - t.backoff)) > {tolerance}),
               list(coalesce(o.ngram, t.ngram)) FILTER (o.ngram IS NULL OR t.ngram IS NULL
                   OR greatest(abs(o.prob - t.prob), abs(o.backoff - t.backoff)) > {tolerance})[:10]
        FROM {_entries(ours)} o FULL JOIN {_entries(theirs)} t ON o.ngram = t.ngram""").fetchall()[0]
    con.close()
    names = ("ours", "theirs", "only_one", "max_prob", "max_backoff", "beyond", "examples")
    return dict(zip(names, row))


def discount_difference(dataset: str, lmplz_log: str, verbose: bool = False) -> float:
    """The largest difference between the discounts in DATASET's manifest and lmplz's Statistics lines."""
    orders = json.load(open(os.path.join(dataset, "_manifest.json")))["mkn"]["orders"]
    text = open(lmplz_log).read()
    worst = 0.0
    for found in re.finditer(r"^(\d+) \S+ D1=(\S+) D2=(\S+) D3\+=(\S+)$", text, re.M):
        theirs = [float(x) for x in found.groups()[1:]]
        ours = orders[found.group(1)]["discounts"]
        worst = max([worst] + [abs(a - b) for a, b in zip(ours, theirs)])
        if verbose:
            print(f"order {found.group(1)}: ours {[round(d, 9) for d in ours]}, lmplz {theirs}")
    return worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ours")
    parser.add_argument("theirs")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--dataset", help="the ngramflow dataset OURS came from")
    parser.add_argument("--lmplz-log", help="lmplz's stderr, with its Statistics lines")
    parser.add_argument("--discount-tolerance", type=float, default=1e-6)
    args = parser.parse_args(argv)
    found = compare_files(args.ours, args.theirs, args.tolerance)
    print(f"n-grams: {found['ours']} ours, {found['theirs']} theirs, {found['only_one']} in one file only")
    print(f"max |d log10 prob| {found['max_prob']:.2g}, max |d log10 backoff| {found['max_backoff']:.2g}, "
          f"{found['beyond']} beyond {args.tolerance:g}; e.g. {found['examples']}")
    same = not (found["only_one"] or found["beyond"])
    if args.dataset and args.lmplz_log:
        worst = discount_difference(args.dataset, args.lmplz_log, verbose=True)
        print(f"max |d discount| {worst:.2g} (lmplz prints as many digits as its stream precision)")
        same = worst <= args.discount_tolerance and same
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
