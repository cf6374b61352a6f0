"""Two checkouts' imports of the same corpora, alternated with isal decompression of the files, so that each
pair sees the same moment of a shared machine (BENCHMARKS.md, issue 16's sixth round):

    python -m benchmarks.alternate CORPUS_DIR... --trees BEFORE AFTER [--rounds 4] [--cold]

A tree is a checkout set up with `make setup` (its .venv runs its own code). Each round runs, per corpus
folder: isal over its .gz files, then each tree's `ngramflow import` of the folder with its defaults, the trees
in turn first (the second round runs them in the reverse order, so two trees take an even number of rounds): what
a run leaves the machine (its page cache, its writes still going to disk) is not left to one tree. In 3 rounds,
the tree first in two of them was the faster by 0.2-0.4 s on 5 corpora of 6; in 4 rounds the same two trees were
0.0-0.06 s apart (BENCHMARKS.md, issue 16's forty-fifth round). Each tree writes into a folder of its own, emptied
before its run and outside its measure: deleting the dataset of the run before, as --overwrite would, is not an
import's work (a dataset of 101 MB written out to disk: 0.06 s). Prints one line per command; per folder, the
medians and each median's ratio to isal's, each tree's ratios to the isal run of their own round (their range,
their median, and in how many rounds they meet issue 16's TARGET), and for each tree after the first the mean of
its differences from the first tree's run of the same round, wall and CPU, with the rounds in which it was
faster. Each command (isal's too) reads the corpus from the page cache, its files read just before it (a host that
drops pages read minutes before charged a round's isal alone for its disk); with --cold, each reads it from disk:
its files' pages are dropped from the page cache before it, as a user's corpus is not held there (BENCHMARKS.md,
issue 16's forty-sixth and forty-seventh rounds). (The
trees' kernels, built by each setup, differ in their bytes when their sources do not: copy one's built
transforms/_kernel*.so into the other when the change is not the kernel's.)
"""

import argparse
import functools
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tomllib

from benchmarks.measure import dropped, run, warmed

#: Issue 16's target: an import's wall time at most this many times isal's decompression of the same files.
TARGET = 3.0


def _line(label: str, m) -> str:
    return (f"{label:<40} wall {m.wall_seconds:6.2f} s  cpu {m.cpu_seconds:6.2f} s  "
            f"rss {m.peak_rss_bytes / 2**20:6.0f} MiB")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpora", nargs="+", metavar="CORPUS_DIR", help="folders of .gz n-gram files")
    parser.add_argument("--trees", nargs="+", required=True, metavar="TREE", help="checkouts set up with make setup")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cold", action="store_true", help="each command reads the corpus from disk")
    args = parser.parse_args(argv)
    if len(args.trees) == 2 and args.rounds % 2:
        parser.error("--rounds must be even for two trees: each is first in half of the rounds")
    for tree in args.trees:
        _check_own_code(tree)
    with tempfile.TemporaryDirectory(prefix="ngramflow-alternate-") as scratch:
        for corpus in args.corpora:
            files = sorted(glob.glob(os.path.join(corpus, "**", "*.gz"), recursive=True))
            walls, measured = {}, {tree: [] for tree in args.trees}
            before = functools.partial(dropped if args.cold else warmed, files)
            for round_ in range(args.rounds):
                before()
                m = run([sys.executable, "-m", "benchmarks.peers", "isal", "-", *files])
                walls.setdefault("isal", []).append(m.wall_seconds)
                print(_line(f"{os.path.basename(corpus)} isal", m), flush=True)
                for tree in args.trees if round_ % 2 == 0 else args.trees[::-1]:
                    m = _import(tree, corpus, os.path.join(scratch, f"out-{args.trees.index(tree)}"), before)
                    measured[tree].append(m)
                    print(_line(f"{os.path.basename(corpus)} {tree}", m), flush=True)
            walls.update({tree: [m.wall_seconds for m in ms] for tree, ms in measured.items()})
            isal = statistics.median(walls["isal"])
            for label, seconds in walls.items():
                median = statistics.median(seconds)
                line = f"  median {label}: {median:.2f} s, {median / isal:.2f}x isal"
                if label != "isal":
                    # Each import against the isal run of its own round: the host's speed drifts within minutes
                    # (isal's own time over the same files by a sixth), and a round's runs share a moment of it.
                    ratios = sorted(s / i for s, i in zip(seconds, walls["isal"]))
                    met = sum(r <= TARGET for r in ratios)
                    line += (f"; its rounds' own ratios {ratios[0]:.2f}-{ratios[-1]:.2f}x, median "
                             f"{statistics.median(ratios):.2f}x, at most {TARGET:g}x in {met} of {len(ratios)}")
                print(line)
            first, *others = args.trees
            for tree in others:
                pairs = list(zip(measured[first], measured[tree]))
                wall = statistics.mean(b.wall_seconds - a.wall_seconds for a, b in pairs)
                cpu = statistics.mean(b.cpu_seconds - a.cpu_seconds for a, b in pairs)
                faster = sum(b.wall_seconds < a.wall_seconds for a, b in pairs)
                print(f"  {tree} - {first}, mean of {len(pairs)} rounds: wall {wall:+.3f} s (faster in {faster}), "
                      f"CPU {cpu:+.3f} s")
    return 0


#: What a tree's Python prints of where it finds each package NAMES (argv) and the kernel, a tab-separated line each.
_WHERE = ("import importlib, sys\n"
          "for name in sys.argv[1:]:\n"
          "    print(name, next(iter(importlib.import_module(name).__path__)), sep='\\t')\n"
          "from ngramflow.transforms.native import _kernel\n"
          "print('the kernel', _kernel.__file__, sep='\\t')\n")


def _check_own_code(tree: str) -> None:
    """Exit with one line unless TREE's Python, run in it as _import runs it, takes every package of the tree's
    pyproject.toml (its package-dir) and the kernel from TREE. A tree whose .venv is a link to another checkout's
    takes the package from its own folder and the subpackages from the other checkout, where that checkout's
    editable install maps them: its imports were the other's (an A/B of one checkout against itself, 4 rounds on
    this host: -1.43 to +0.05 s "between" them; BENCHMARKS.md, issue 16's forty-ninth round)."""
    with open(os.path.join(tree, "pyproject.toml"), "rb") as fh:
        packages = list(tomllib.load(fh)["tool"]["setuptools"]["package-dir"])
    python = os.path.join(tree, ".venv", "bin", "python")
    found = subprocess.run([python, "-c", _WHERE, *packages], cwd=tree, capture_output=True, text=True)
    if found.returncode:
        said = (found.stderr.strip().splitlines() or ["no message"])[-1]
        raise SystemExit(f"{tree}: its .venv does not import ngramflow ({said}); run make setup there")
    inside = os.path.realpath(tree) + os.sep
    for line in found.stdout.splitlines():
        name, path = line.split("\t")
        if not os.path.realpath(path).startswith(inside):
            raise SystemExit(f"{tree}: its Python takes {name} from {path}, outside the tree (a .venv of another "
                             "checkout maps its subpackages there); run make setup in the tree")


def _import(tree: str, corpus: str, out: str, before):
    """TREE's import of CORPUS into OUT, emptied first and BEFORE called (unmeasured), measured."""
    shutil.rmtree(out, ignore_errors=True)
    before()
    python = os.path.join(tree, ".venv", "bin", "python")
    # In the tree: `python -m` puts the working folder first on the import path, so from another checkout its
    # ngramflow/ package would be the one imported.
    m = run([python, "-m", "ngramflow.cli", "import", os.path.abspath(corpus), "--output", out, "--quiet"],
            cwd=tree)
    if m.returncode:
        raise SystemExit(f"{tree} failed on {corpus}:\n{m.output[-2000:]}")
    return m


if __name__ == "__main__":
    sys.exit(main())
