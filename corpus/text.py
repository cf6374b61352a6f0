"""Plain text -> n-gram counts in Google's 2012 file format.

The bridge for checking the MKN stage against KenLM's lmplz, which estimates
from text: every line is a sentence of whitespace-separated tokens, padded
``_START_ w1 ... wk _END_`` (lmplz pads with <s> and </s> the same way, and
also counts a blank line, as ``<s> </s>``), and every n-gram of orders 1..N
inside the padded sentence is counted. Each
order goes to ``googlebooks-{lang}-all-{n}gram-20120701-text.gz``, one row per
n-gram: ``ngram TAB year TAB match_count TAB 1``.

    python -m ngramflow.corpus.text corpus.txt --order 3 --output DIR [--min-count 40]

``--min-count K`` keeps only n-grams counted at least K times, which is how
Google pruned its corpus (K = 40).
"""

import argparse
import gzip
import os
import sys
from collections import Counter

from ngramflow.schemas import order_of

START, END = "_START_", "_END_"


def sentences(lines):
    """Token lists of the lines (a blank line is an empty sentence)."""
    for line in lines:
        yield line.split()


def count_ngrams(token_lists, max_order: int, min_order: int = 1) -> Counter:
    """Counts of the n-grams of orders MIN_ORDER..MAX_ORDER in the padded sentences."""
    counts = Counter()
    for tokens in token_lists:
        padded = [START, *tokens, END]
        for order in range(min_order, max_order + 1):
            for i in range(len(padded) - order + 1):
                counts[" ".join(padded[i:i + order])] += 1
    return counts


def write_2012(counts: Counter, out_dir: str, lang: str = "eng", year: int = 2000, min_count: int = 1) -> list[str]:
    """Write the counts, sorted by n-gram within each order file; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    by_order: dict[int, list[str]] = {}
    for ngram, count in counts.items():
        if count >= min_count:
            by_order.setdefault(order_of(ngram), []).append(ngram)
    paths = []
    for order, ngrams in sorted(by_order.items()):
        path = os.path.join(out_dir, f"googlebooks-{lang}-all-{order}gram-20120701-text.gz")
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for ngram in sorted(ngrams):
                fh.write(f"{ngram}\t{year}\t{counts[ngram]}\t1\n")
        paths.append(path)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ngramflow.corpus.text", description=__doc__.split("\n\n")[0])
    parser.add_argument("text", nargs="+", help="UTF-8 text files, one sentence per line")
    parser.add_argument("--order", type=int, required=True, help="count n-grams of orders 1..ORDER")
    parser.add_argument("--output", required=True, help="directory for the .gz files")
    parser.add_argument("--min-count", type=int, default=1, help="keep n-grams counted at least this often")
    args = parser.parse_args(argv)
    # One order at a time: memory holds the distinct n-grams of one order, not of all of them.
    for order in range(1, args.order + 1):
        counts = Counter()
        for path in args.text:
            with open(path, encoding="utf-8") as fh:
                counts.update(count_ngrams(sentences(fh), order, order))
        for path in write_2012(counts, args.output, min_count=args.min_count):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
