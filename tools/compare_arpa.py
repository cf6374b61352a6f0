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


def read_arpa(path: str) -> dict:
    entries, order = {}, None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            section = re.fullmatch(r"\\(\d+)-grams:", line)
            if section:
                order = int(section.group(1))
            elif order and line and not line.startswith("\\"):
                fields = line.split("\t")
                entries[fields[1]] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return entries


def compare_models(ours: dict, theirs: dict, tolerance: float) -> bool:
    missing, extra = set(theirs) - set(ours), set(ours) - set(theirs)
    worst_prob = worst_backoff = 0.0
    beyond = []
    for ngram in set(ours) & set(theirs):
        d_prob, d_backoff = (abs(a - b) for a, b in zip(ours[ngram], theirs[ngram]))
        worst_prob, worst_backoff = max(worst_prob, d_prob), max(worst_backoff, d_backoff)
        if max(d_prob, d_backoff) > tolerance:
            beyond.append(ngram)
    print(f"n-grams: {len(ours)} ours, {len(theirs)} theirs, {len(missing)} missing, {len(extra)} extra")
    print(f"max |d log10 prob| {worst_prob:.2g}, max |d log10 backoff| {worst_backoff:.2g}, "
          f"{len(beyond)} beyond {tolerance:g}")
    for ngram in sorted(missing)[:5] + sorted(extra)[:5] + sorted(beyond)[:5]:
        print(f"  {ngram!r}: ours {ours.get(ngram)}, theirs {theirs.get(ngram)}")
    return not (missing or extra or beyond)


def compare_discounts(dataset: str, lmplz_log: str, tolerance: float) -> bool:
    orders = json.load(open(os.path.join(dataset, "_manifest.json")))["mkn"]["orders"]
    text = open(lmplz_log).read()
    worst = 0.0
    for found in re.finditer(r"^(\d+) \S+ D1=(\S+) D2=(\S+) D3\+=(\S+)$", text, re.M):
        theirs = [float(x) for x in found.groups()[1:]]
        ours = orders[found.group(1)]["discounts"]
        worst = max([worst] + [abs(a - b) for a, b in zip(ours, theirs)])
        print(f"order {found.group(1)}: ours {[round(d, 9) for d in ours]}, lmplz {theirs}")
    print(f"max |d discount| {worst:.2g} (lmplz prints as many digits as its stream precision)")
    return worst <= tolerance


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ours")
    parser.add_argument("theirs")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--dataset", help="the ngramflow dataset OURS came from")
    parser.add_argument("--lmplz-log", help="lmplz's stderr, with its Statistics lines")
    parser.add_argument("--discount-tolerance", type=float, default=1e-6)
    args = parser.parse_args(argv)
    same = compare_models(read_arpa(args.ours), read_arpa(args.theirs), args.tolerance)
    if args.dataset and args.lmplz_log:
        same = compare_discounts(args.dataset, args.lmplz_log, args.discount_tolerance) and same
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
