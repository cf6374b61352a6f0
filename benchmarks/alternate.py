"""Two checkouts' imports of the same corpora, alternated with isal decompression of the files, so that each
pair sees the same moment of a shared machine (BENCHMARKS.md, issue 16's sixth round):

    python -m benchmarks.alternate CORPUS_DIR... --trees BEFORE AFTER [--rounds 3]

A tree is a checkout set up with `make setup` (its .venv runs its own code). Each round runs, per corpus
folder: isal over its .gz files, then each tree's `ngramflow import` of the folder with its defaults. Prints
one line per command and, per folder, the medians and each median's ratio to isal's.
"""

import argparse
import glob
import os
import statistics
import sys
import tempfile

from benchmarks.measure import run


def _line(label: str, m) -> str:
    return (f"{label:<40} wall {m.wall_seconds:6.2f} s  cpu {m.cpu_seconds:6.2f} s  "
            f"rss {m.peak_rss_bytes / 2**20:6.0f} MiB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpora", nargs="+", metavar="CORPUS_DIR", help="folders of .gz n-gram files")
    parser.add_argument("--trees", nargs="+", required=True, metavar="TREE", help="checkouts set up with make setup")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ngramflow-alternate-") as scratch:
        for corpus in args.corpora:
            files = sorted(glob.glob(os.path.join(corpus, "**", "*.gz"), recursive=True))
            walls = {}
            for _ in range(args.rounds):
                m = run([sys.executable, "-m", "benchmarks.peers", "isal", "-", *files])
                walls.setdefault("isal", []).append(m.wall_seconds)
                print(_line(f"{os.path.basename(corpus)} isal", m), flush=True)
                for tree in args.trees:
                    python = os.path.join(tree, ".venv", "bin", "python")
                    out = os.path.join(scratch, "out")
                    # In the tree: `python -m` puts the working folder first on the import path, so from
                    # another checkout its ngramflow/ package would be the one imported.
                    m = run([python, "-m", "ngramflow.cli", "import", os.path.abspath(corpus), "--output", out,
                             "--overwrite", "--quiet"], cwd=tree)
                    if m.returncode:
                        raise SystemExit(f"{tree} failed on {corpus}:\n{m.output[-2000:]}")
                    walls.setdefault(tree, []).append(m.wall_seconds)
                    print(_line(f"{os.path.basename(corpus)} {tree}", m), flush=True)
            isal = statistics.median(walls["isal"])
            for label, seconds in walls.items():
                median = statistics.median(seconds)
                print(f"  median {label}: {median:.2f} s, {median / isal:.2f}x isal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
